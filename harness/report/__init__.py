"""The report: Allure labels, steps and attachments, the ownership timeline chart, the HTML generator, and a run's
outcome in one line with its witnesses as sentences (`headline`: what the plugin, the CLI and a repeat print first).

May import: `base`, `record`, `invariants`, `findings`.
"""
