"""The report: Allure labels, steps and attachments, the ownership timeline chart, and the HTML generator.

May import: `base`, `record`, `invariants`, `findings`.
"""
