"""The `harness` command: run, replay, list scenarios, resolve versions, check a run directory."""
from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

from harness.base.blas import one_thread
from harness.base import near
from harness.base.errors import HarnessError
from harness.base.vocabulary import MISBEHAVE_HELP
from harness.base.stdio import quiet_when_readers_leave
from harness.plan import options


EPILOG = """exit codes: 0 every invariant holds; 1 an invariant is violated (or could not be decided);
2 bad input or a set-up failure (one line on stderr saying what).
Run directories land under --runs-root (default: runs/); docs/run-directory.md describes them."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one clear line, exit 2
        self.exit(2, f"harness: {message} (see `{self.prog} --help`)\n")

    def _check_value(self, action, value):  # a misspelt command or choice names the one probably meant
        if action.choices is not None and value not in action.choices:
            close = near.closest(value, action.choices)
            raise argparse.ArgumentError(action, f"invalid choice: {value!r}; " + (
                f"did you mean {close[0]}?" if close else f"choose from {', '.join(map(str, action.choices))}"))
        super()._check_value(action, value)


#: the groups of options a command's --help shows, in this order, each with its one line (at most 76 characters:
#: the help prints it as written); a command has the groups of the options it takes (`run` all but "output",
#: `replay` and `nightly` those they share with it)
GROUPS = {
    "what to run": "what runs, under which seed and protocol",
    "versions": "the Kafka release of the brokers, the client library of the members",
    "cluster": "the brokers: how many, and where they run",
    "members and settings": "the members' programs and habits; settings of clients, brokers, groups",
    "faults and self-tests": "members that break the rules on purpose, which the checkers must catch",
    "repeat and output": "runs again under more seeds; where run directories and progress lines go",
    "output": "where the run directories and progress lines go",
}


def _group(sp, title: str):
    """The argument group `title` of a command's parser, made (with its line of GROUPS) on first use; a group given
    instead of a parser is itself."""
    if not isinstance(sp, argparse.ArgumentParser):
        return sp
    if title == "output" and _has_group(sp, "repeat and output"):
        title = "repeat and output"
    made = [g for g in sp._action_groups if g.title == title]
    return made[0] if made else sp.add_argument_group(title, GROUPS[title])


def _has_group(sp: argparse.ArgumentParser, title: str) -> bool:
    return any(g.title == title for g in sp._action_groups)


def _parser() -> argparse.ArgumentParser:
    """The parser of every command."""
    p = _Parser(prog="harness", description="Conformance and chaos harness for Kafka rebalancing.",
                                epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"harness {_version()}")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND", parser_class=_Parser)
    _add_run(sub)
    _add_replay(sub)
    _add_nightly(sub)
    _add_matrix(sub)
    _add_tools(sub)
    return p


def _version() -> str:
    """The installed harness's version (its package metadata)."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("kafka-rebalance-harness")
    except PackageNotFoundError:
        return "(not installed: run from a checkout without `pip install -e .`)"


def _common(sp):
    """The options every command that writes run directories takes."""
    sp = _group(sp, "output")
    sp.add_argument("--runs-root", default="runs", help="where run directories are written (default: runs)")
    sp.add_argument("--quiet", action="store_true", help="no progress lines")


def _backend(sp, default: str):
    """--backend, with the command's default named in its help."""
    from harness.plan.backends import BACKENDS
    _group(sp, "cluster").add_argument("--backend", default=None, choices=list(BACKENDS),
                    help=f"where the brokers run: local (broker JVMs on loopback), docker (containers from images "
                         f"built on this machine; an engine is started if none answers; docs/docker.md); "
                         f"default: {default}")


def _commit_mode(sp, default: str):
    """--commit-mode, with the command's default named in its help."""
    from harness.base.vocabulary import COMMIT_MODES
    _group(sp, "members and settings").add_argument("--commit-mode", default=None, choices=COMMIT_MODES,
                    help=f"how the members commit (HARNESS_COMMIT_MODE, docs/member-contract.md): sync after "
                         f"each poll, async after each poll, auto (the client's auto-commit), never (a self-test: "
                         f"commit_progress fails); default: {default}")


def _processing_ms(sp, default: str):
    """--processing-ms, with the command's default named in its help."""
    _group(sp, "members and settings").add_argument("--processing-ms", type=float, default=None, metavar="MS",
                    help=f"milliseconds of simulated work per record in every member (HARNESS_PROCESSING_MS, "
                         f"docs/member-contract.md): a group of N members then has a finite throughput and lag "
                         f"builds when the producer outpaces it; default: {default}")


def _revoke_delay_ms(sp, default: str):
    """--revoke-delay-ms, with the command's default named in its help."""
    _group(sp, "members and settings").add_argument("--revoke-delay-ms", type=float, default=None, metavar="MS",
                    help=f"milliseconds every consumer-group member's revoke handler waits before its commit "
                         f"(HARNESS_REVOKE_DELAY_MS, docs/member-contract.md), as an application's slow handler "
                         f"does; default: {default}")


def _members_and_settings(sp):
    """The members' options and the settings of clients, brokers and the group (run and nightly)."""
    from harness.base.vocabulary import MEMBER_KINDS
    sp = _group(sp, "members and settings")
    sp.add_argument("--member", default="python", choices=MEMBER_KINDS,
                    help="the built-in member every slot runs (default: python, on confluent-kafka; java: the "
                         "Apache Kafka Java client of the brokers' version, or of --client-version)")
    sp.add_argument("--member-command", action="append", default=[], metavar="[slotN=]CMD",
                    help="your own member program (docs/member-contract.md), split like a shell line: "
                         "'CMD ARGS' for every slot, or slotN='CMD ARGS' for slot N only (0-based: slot0 is "
                         "the first member); repeatable, so a run can mix your members with the harness's")
    sp.add_argument("--client-set", action="append", default=[], metavar="KEY=VALUE",
                    help="a client setting for every member (HARNESS_CLIENT_CONFIG); repeatable")
    sp.add_argument("--broker-set", action="append", default=[], metavar="KEY=VALUE",
                    help="a broker setting into every broker's server.properties (a key the release does not "
                         "define is refused up front); repeatable")
    sp.add_argument("--group-set", action="append", default=[], metavar="KEY=VALUE",
                    help="a group config (Kafka 4.0+) set through the Admin API before the first member joins, "
                         "e.g. consumer.session.timeout.ms=10000; repeatable")
    _commit_mode(sp, "sync, or the scenario file's")
    _processing_ms(sp, "0, or the scenario's")
    sp.add_argument("--members-per-process", type=int, default=None, metavar="N",
                    help="consumers each Python member process hosts, each its own member with its own history "
                         "(docs/member-contract.md, \"Hosted members\"); a kill or a pause of one would reach "
                         "them all, so schedules with kill_member, pause_member or rack_outage are refused; "
                         "default: 1, or the scenario file's")


def _add_run(sub):
    """`harness run`: its options in the groups of GROUPS."""
    from harness.drive.repeat import add_run_arguments
    from harness.base.vocabulary import ALL_PROTOCOLS
    r = sub.add_parser("run", help="run one scenario and judge it", epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    what, versions, cluster, members, faults, repeat = (_group(r, t) for t in list(GROUPS)[:6])
    what.add_argument("scenario", help="scenario name (see `harness scenarios`), or a scenario file: a path ending in "
                                       ".toml or naming an existing file (docs/scenarios.md); the command line's "
                                       "options win over the file's settings")
    what.add_argument("--dry-run", action="store_true",
                      help="check everything that needs no cluster (the scenario, settings, each step's bounds, the "
                           "request faults, the brokers' version gates), print the schedule it would run, start "
                           "nothing")
    what.add_argument("--protocol", default=None, choices=ALL_PROTOCOLS,
                      help="group protocol of the members (default: classic-cooperative; for the streams-* "
                           "scenarios: classic, or streams for KIP-1071's broker-side protocol; for the connect-* "
                           "scenarios: connect.protocol sessioned (default), compatible or eager)")
    what.add_argument("--seed", type=int, default=None, help="seed for timings and choices (default: random)")
    versions.add_argument("--kafka-version", default="latest",
                          help="Apache Kafka version from Maven Central: x.y.z, x.y, latest (newest 4.x), latest-3")
    versions.add_argument("--client-version", default=None,
                          help="confluent-kafka version for the members (default: the one installed with the "
                               "harness); with --member java the kafka-clients version from Maven Central (default: "
                               "the brokers'); for streams-* scenarios the kafka-streams version, for connect-* the "
                               "connect-runtime version (default: the brokers' version)")
    cluster.add_argument("--brokers", type=int, default=3, help="number of brokers (default: 3)")
    _backend(cluster, "local")
    faults.add_argument("--misbehave", default=None, choices=MISBEHAVE_HELP, metavar="SELF_TEST",
                        help="make one member (an assignor's: every member) break the rules on purpose (a self-test "
                             "of the checkers): " + "; ".join(f"{k}: {v}" for k, v in MISBEHAVE_HELP.items()))
    _members_and_settings(members)
    members.add_argument("--streams-set", action="append", default=[], metavar="KEY=VALUE",
                         help="a Kafka Streams setting of a streams-* scenario, e.g. num.standby.replicas=1 "
                              "(repeatable; docs/streams.md lists them)")
    members.add_argument("--connect-set", action="append", default=[], metavar="KEY=VALUE",
                         help="a Kafka Connect setting of a connect-* scenario, e.g. "
                              "scheduled.rebalance.max.delay.ms=0 (repeatable; docs/connect.md lists them)")
    _revoke_delay_ms(members, "0, or the scenario's")
    add_run_arguments(repeat)
    from harness.drive.explore import add_arguments as add_explore_arguments
    add_explore_arguments(repeat)
    _common(repeat)


def _add_replay(sub):
    """`harness replay`: the groups it shares with `run`."""
    rp = sub.add_parser("replay", help="run the recorded schedule of a run directory again")
    _group(rp, "what to run").add_argument("run_dir", type=Path, help="the run directory whose schedule runs again")
    _backend(rp, "the recorded run's")
    _commit_mode(rp, "the recorded run's")
    _processing_ms(rp, "the recorded run's")
    _revoke_delay_ms(rp, "the recorded run's")
    _group(rp, "what to run").add_argument(
        "--exact", action="store_true",
        help="re-impose the run's recorded order of requests at the request proxy too (JoinGroup, SyncGroup, "
             "LeaveGroup, OffsetCommit, matched by API and position in each member's stream), and an explored run's "
             "perturbations; says where the order diverged, if it did (docs/repeat.md, \"Exact replay\"; local "
             "backend only)")
    _common(rp)


def _add_nightly(sub):
    """`harness nightly`: the groups it shares with `run`."""
    from harness.drive.repeat import add_nightly_argument
    from harness.base.vocabulary import CONSUMER_PROTOCOLS
    n = sub.add_parser("nightly", help="a seeded random mix of scenarios over a version matrix, for a time budget")
    what, versions = _group(n, "what to run"), _group(n, "versions")
    what.add_argument("--budget", default="30m", help="how long to keep starting runs: 30m, 90s, 1h30m (default: 30m)")
    what.add_argument("--seed", type=int, default=None, help="seed of every pick (default: random)")
    what.add_argument("--protocols", default=",".join(CONSUMER_PROTOCOLS), type=_protocols,
                      help="comma-separated protocols (default: the three consumer-group ones; add classic and/or "
                           "streams for the Kafka Streams scenarios, sessioned, compatible and/or eager for the Kafka "
                           "Connect ones)")
    what.add_argument("--shard", default=None, metavar="K/N",
                      help="run only shard K of N of the night: its draws numbered K-1 modulo N. N machines each "
                           "running one shard with the same --seed (and --runs) run exactly the unsharded night; "
                           "point their --runs-root at one shared path and `harness aggregate` it (docs/nightly.md)")
    what.add_argument("--runs", type=int, default=None, metavar="COUNT",
                      help="stop after the night's first COUNT draws (default: draw until the budget is spent)")
    versions.add_argument("--kafka-versions", default="latest", help="comma-separated Kafka versions (default: latest)")
    versions.add_argument("--client-versions", default="default",
                          help="comma-separated confluent-kafka versions; 'default' = the harness's own")
    _backend(n, "local")
    _members_and_settings(n)
    repeat = _group(n, "repeat and output")
    add_nightly_argument(repeat)
    repeat.add_argument("--shrink-attempts", type=int, default=12, help="runs spent shrinking each failure (default: 12)")
    _common(n)


def _protocols(text: str) -> str:
    """--protocols as given, each a known protocol (argparse says a misspelt one in one line, naming the close one)."""
    from harness.base.vocabulary import ALL_PROTOCOLS
    for p in (p for p in text.split(",") if p):
        if p not in ALL_PROTOCOLS:
            raise argparse.ArgumentTypeError(near.unknown("protocol", p, ALL_PROTOCOLS))
    return text


def _add_matrix(sub):
    """`harness matrix`."""
    m = sub.add_parser("matrix", help="the matrix of correct runs: member-kill on each client release, four scenarios "
                                      "on each Kafka minor, every scenario on the newest; each cell judged (pass, known "
                                      "finding, refusal, or to settle); resumable (docs/nightly.md)")
    m.add_argument("--part", default="all", help="clients, kafka, newest (comma-separated), or all (default)")
    m.add_argument("--seed", type=int, default=None,
                   help="seed of every cell's run seed (default: the runs root's earlier matrix's, else random)")
    m.add_argument("--list", action="store_true", help="print the cells (as `harness run` lines) and exit")
    m.add_argument("--stop-at", default=None, metavar="HH:MM", help="start no cell after this UTC time of day (its next coming)")
    m.add_argument("--rerun-unexplained", action="store_true",
                   help="run once more each recorded cell that failed or ended unknown with no known finding (one "
                        "suspected of failing under the machine's load); its first run is kept as `earlier`")
    m.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="cells run at a time (default 1); each is its own `harness run` with its own cluster")
    _common(m)


def _check(path: Path) -> int:
    """`harness check`: the verdict table of a run directory judged again from its history, and last its one line
    (`headline`). A run that never finished (its STATUS still `incomplete` or `error`: interrupted, crashed) has a
    partial history: its table is printed, and said to be of an incomplete run, never a pass (exit 2). A finished run
    judged otherwise now than it recorded (an older harness judged it) says what it recorded and what is new."""
    from harness.invariants import judge
    from harness.invariants.clock import run_t0
    from harness.record.rundir import EXIT_CODES, RunDir, status_of
    from harness.report.headline import headline
    rd = RunDir.open(path)
    history = rd.history()
    verdicts, t0 = judge(history), run_t0(history)
    print_table(verdicts, t0=t0)
    if (status := rd.status()) in ("incomplete", "error"):
        why = rd.status_reason()
        print(f"status: {status} (the run did not finish{': ' + why if why else ''}): these verdicts judge a "
              f"partial history and are not a pass")
        print(headline(verdicts, t0=t0, status=status, error=f"the run did not finish{f' ({why})' if why else ''}"))
        return EXIT_CODES[status]
    now = status_of(v.status for v in verdicts.values())
    try:
        recorded = rd.verdicts()
    except (OSError, ValueError):  # a torn verdicts.json: what it recorded is said from STATUS alone
        recorded = None
    for line in recorded_lines(status, recorded, verdicts, now):
        print(line)
    print(headline(verdicts, t0=t0, status=now))
    return {"pass": 0, "fail": 1, "unknown": 1}[now]


def recorded_lines(recorded: str, recorded_verdicts: dict | None, verdicts: dict, now: str) -> list[str]:
    """What `harness check` says of a finished run judged otherwise now than it recorded (by an older harness): its
    recorded status (STATUS; verdicts.json: None when it cannot be read, {} when absent), the invariants new to it
    (judged now, absent from its verdicts.json) and those judged otherwise now; nothing when judged as it recorded."""
    from harness.record.rundir import STATUS, VERDICTS_JSON
    if not recorded_verdicts or not isinstance(recorded_verdicts, dict):
        said = f"its {VERDICTS_JSON} cannot be read" if recorded_verdicts is None else f"no {VERDICTS_JSON}"
        return [] if recorded == now else [f"recorded: {recorded} (its {STATUS}; {said}); judged now: {now}"]
    new = [n for n in verdicts if n not in recorded_verdicts]
    changed = [f"{n} (recorded {recorded_verdicts[n].get('status')}, now {v.status})" for n, v in verdicts.items()
               if n in recorded_verdicts and isinstance(recorded_verdicts[n], dict)
               and recorded_verdicts[n].get("status") != v.status]
    if recorded == now and not new and not changed:
        return []
    lines = [f"recorded: {recorded} (its {STATUS}; {VERDICTS_JSON}: {len(recorded_verdicts)} invariants); judged "
             f"now: {now}" + (" (a harness older than this one judged it)" if new else "")]
    if new:
        lines.append(f"new to it (judged now, absent from its {VERDICTS_JSON}): {', '.join(new)}")
    if changed:
        lines.append(f"judged otherwise now: {', '.join(changed)}")
    return lines


def _add_tools(sub):
    """The commands around the runs: scenarios, check, aggregate, kafka, images, report."""
    sub.add_parser("scenarios", help="list the scenarios by kind of group, wrapped to the terminal's width")

    c = sub.add_parser("check", help="judge an existing run directory again and print its verdict table")
    c.add_argument("run_dir", type=Path)

    ag = sub.add_parser("aggregate", help="PySpark job: Parquet tables and a trend summary over many run directories")
    ag.add_argument("run_dirs", nargs="+", help="run directories, or folders holding them")
    ag.add_argument("--out", required=True, help="where the tables, summary.json/.html and skipped.json go")
    ag.add_argument("--master", default=None, help="Spark master URL (default: local[*])")

    k = sub.add_parser("kafka", help="resolve a Kafka version from Maven Central into the cache")
    k.add_argument("version", nargs="?", default="latest")

    im = sub.add_parser("images", help="build the docker backend's images (base from debootstrap, Kafka, Toxiproxy) "
                                       "where missing; an engine is started if none answers (docs/docker.md)")
    im.add_argument("versions", nargs="*", default=["latest"], help="Kafka versions (default: latest)")
    im.add_argument("--base", default=None, help="a public image to start from instead of the harness's own "
                                                  "Debian base, where a registry is reachable (e.g. eclipse-temurin:17-jre)")
    im.add_argument("--quiet", action="store_true", help="no progress lines")

    rep = sub.add_parser("report", help="generate the HTML Allure report (allure-commandline from npm, cached)")
    rep.add_argument("--results", default="reports/allure-results", help="Allure results dir (default: %(default)s)")
    rep.add_argument("--out", default="reports/allure-report", help="where the report goes (default: %(default)s)")


def print_table(verdicts: dict, *, out=None, t0: float | None = None) -> None:
    """The verdict table: one row per invariant, a failing one's witnesses as sentences under it (times in seconds
    from the run's start `t0`; the raw witnesses are in verdicts.json)."""
    from harness.report.headline import witness_lines
    out = out or sys.stdout
    out.write(f"{'invariant':<22} {'verdict':<9} detail\n")
    for name, v in verdicts.items():
        d = v if isinstance(v, dict) else v.to_dict()
        out.write(f"{name:<22} {d['status']:<9} {d['message']}\n")
        if d["status"] == "invalid":
            for line in witness_lines(d, t0=t0):
                out.write(f"{'':<33}witness: {line}\n")


def _finish(result) -> int:
    """`harness run`'s end: the verdict table, the run directory, its status, and last the one line saying it."""
    from harness.report.headline import headline, run_t0
    _draw_timeline(result.run_dir)
    print()
    t0 = run_t0(result.run_dir)
    if result.verdicts:
        print_table(result.verdicts, t0=t0)
    print(f"\nrun directory: {result.run_dir}\nstatus: {result.status}")
    if result.error:
        print(f"harness: {result.error}", file=sys.stderr)
    if result.status != "pass":
        print(f"reproduce: harness replay {result.run_dir}")
    print(headline(result.verdicts, t0=t0, status=result.status, error=result.error))
    return result.exit_code


def _draw_timeline(run_dir) -> None:
    """timeline.svg in the run directory; a chart is a convenience, its failure is only said."""
    from harness.report.allure_run import timeline_svg
    from harness.record.rundir import RunDir
    try:
        if RunDir.is_run_dir(run_dir):
            svg = timeline_svg(Path(run_dir), RunDir(run_dir).meta())
            if svg:
                print(f"timeline: {svg}")
    except Exception as e:
        print(f"no timeline chart for {run_dir}: {type(e).__name__}: {e}")


def _nightly(args, progress) -> int:
    from harness.drive.nightly import nightly, parse_budget, parse_shard, summary_lines
    from harness.base.versions import GROUP_CONFIGS_SINCE, dotted, newest_major_minor
    from harness.base.vocabulary import ALL_PROTOCOLS, CONNECT_PROTOCOLS, STREAMS_PROTOCOLS
    budget = parse_budget(args.budget)
    shard = parse_shard(args.shard)
    if shard[1] > 1 and args.seed is None:
        from harness.base.errors import BadInput
        raise BadInput("--shard needs --seed: every shard of a night draws from the same seed")
    if args.runs is not None and args.runs < 1:
        from harness.base.errors import BadInput
        raise BadInput(f"--runs {args.runs}: a night runs at least one draw")
    backend = args.backend or "local"
    from harness.cluster.backends import preflight
    preflight(backend, progress=progress)
    protocols = [p for p in args.protocols.split(",") if p]
    known = ALL_PROTOCOLS
    bad = [p for p in protocols if p not in known]
    if bad or not protocols:
        from harness.base.errors import BadInput
        raise BadInput(f"unknown protocol(s) {', '.join(bad) or '(none)'}; known: {', '.join(known)}")
    extra = options.member_options(args)
    if extra and set(protocols) & {*STREAMS_PROTOCOLS, *CONNECT_PROTOCOLS} and set(extra) - {"broker_settings", "group_settings",
                                                                          "processing_ms"}:
        from harness.base.errors import BadInput
        raise BadInput("--member, --member-command, --client-set and --commit-mode apply to consumer groups: leave "
                       "the Streams and Connect protocols (classic, streams, sessioned, compatible, eager) out of "
                       "--protocols")
    old = [v for v in args.kafka_versions.split(",") if (newest_major_minor(v) or (99, 0)) < GROUP_CONFIGS_SINCE]
    if extra.get("group_settings") and old:
        from harness.base.errors import BadInput
        raise BadInput(f"--group-set needs Kafka {dotted(GROUP_CONFIGS_SINCE)} or newer (group configs); "
                       f"--kafka-versions names {old[0]}")
    if extra.get("broker_settings") or extra.get("group_settings"):  # the night's clusters start with them
        from harness.kafka import config_names
        from harness.kafka import dist as kafka_dist
        for v in (v for v in args.kafka_versions.split(",") if v):
            config_names.check([k for k, _ in extra.get("broker_settings", ())],
                               [k for k, _ in extra.get("group_settings", ())],
                               [kafka_dist.resolve(v, progress=progress).version], progress=progress)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    progress(f"nightly: budget {budget:.0f}s, seed {seed}, backend {backend}"
             + (f", shard {shard[0]}/{shard[1]}" if shard[1] > 1 else "") + (f", first {args.runs} draws" if args.runs else ""))
    res = nightly(budget_s=budget, seed=seed, kafka_versions=[v for v in args.kafka_versions.split(",") if v],
                  client_versions=[None if v == "default" else v for v in args.client_versions.split(",") if v],
                  protocols=protocols, runs_root=args.runs_root, shrink_attempts=args.shrink_attempts,
                  run_options=extra, backend=backend, shard=shard, runs=args.runs, repeat=args.repeat,
                  progress=progress)
    print("\n" + "\n".join(summary_lines(res)))
    return res.exit_code


def main(argv: list[str] | None = None) -> int:
    quiet_when_readers_leave()  # `harness scenarios | head -3` ends quietly, with the command's own exit code
    one_thread()  # OpenBLAS: no thread pool for numpy, which the harness uses without BLAS (harness.base.blas)
    args = _parser().parse_args(argv)
    from harness.base.procs import install_signal_handlers
    install_signal_handlers()
    try:
        return _dispatch(args)
    except HarnessError as e:
        print(f"harness: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("harness: interrupted; the run directory is marked incomplete", file=sys.stderr)
        return 130


def _dispatch(args) -> int:
    from harness.run.progress import log, setup_cli_logging
    setup_cli_logging(quiet=getattr(args, "quiet", False))
    progress = log.info
    if getattr(args, "runs_root", None) is not None:  # run, replay, nightly: before any cluster or process
        options.check_runs_root(args.runs_root)
    if args.cmd == "scenarios":
        from harness.plan import listing
        from harness.plan.scenarios import SCENARIOS
        print("\n".join(listing.lines(SCENARIOS.values(), cols=listing.width())))
        return 0
    if args.cmd == "kafka":
        from harness.kafka import dist as kafka_dist
        d = kafka_dist.resolve(args.version, progress=progress)
        print(f"Kafka {d.version}: {d.libs}")
        return 0
    if args.cmd == "images":
        import time
        from harness.cluster import docker_engine
        from harness.cluster import docker_images
        t0 = time.monotonic()
        client = docker_engine.client_for(docker_engine.ensure_engine(progress=progress))
        imgs = docker_images.ensure_images(client, args.versions, base=args.base, progress=progress)
        for v in args.versions:
            print(f"kafka {v}: {imgs.kafka[v]}")
        print(f"toxiproxy: {imgs.toxiproxy}\n({time.monotonic() - t0:.0f}s; the same inputs never rebuild)")
        return 0
    if args.cmd == "report":
        from harness.report.generate import generate
        print(f"report: {generate(args.results, args.out, progress=progress)}")
        return 0
    if args.cmd == "aggregate":
        from harness.analytics.job import aggregate
        from harness.base.errors import BadInput
        missing = [d for d in args.run_dirs if not Path(d).is_dir()]
        if missing:
            raise BadInput(f"no such directory: {', '.join(missing)} (aggregate reads run directories, "
                           "or folders holding them)")
        aggregate(args.run_dirs, args.out, master=args.master)
        return 0
    if args.cmd == "check":
        return _check(args.run_dir)
    if args.cmd == "nightly":
        return _nightly(args, progress)
    if args.cmd == "matrix":
        from harness.drive.matrix import main as matrix_main
        return matrix_main(args, progress=progress)
    from harness.run.runner import RunConfig, replay_config, run_scenario
    if args.cmd == "run":
        seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
        cfg = RunConfig.for_scenario(args.scenario, seed=seed, protocol=args.protocol,
                                     kafka_version=args.kafka_version, client_version=args.client_version,
                                     runs_root=args.runs_root, brokers=args.brokers, misbehave=args.misbehave,
                                     **({"backend": args.backend} if args.backend else {}),
                                     streams_settings=options.key_values(args.streams_set),
                                     connect_settings=options.key_values(args.connect_set, "--connect-set"),
                                     **options.member_options(args))
        if args.dry_run:  # every check that starts nothing, then the schedule (harness/run/dry.py)
            from harness.run.dry import dry_run
            return dry_run(cfg)
        if args.explore:  # harness/drive/explore.py
            from harness.drive.explore_run import run_explored
            return run_explored(cfg, args, progress=progress)
        if args.repeat or args.until_fail or args.shrink_attempts is not None:  # harness/drive/repeat.py
            from harness.drive.repeat import run_repeated
            return run_repeated(cfg, args, progress=progress)
        progress(f"scenario {cfg.scenario}{f' (file {cfg.scenario_file})' if cfg.scenario_file else ''}, "
                 f"protocol {cfg.protocol}, seed {seed}")
    else:
        overrides = {**({"backend": args.backend} if args.backend else {}),
                     **({"commit_mode": args.commit_mode} if args.commit_mode else {}),
                     **({"processing_ms": args.processing_ms} if args.processing_ms is not None else {}),
                     **({"revoke_delay_ms": args.revoke_delay_ms} if args.revoke_delay_ms is not None else {})}
        if args.exact:  # harness/drive/exact.py
            from harness.drive.exact import replay_exact
            return _finish(_logged(lambda: replay_exact(args.run_dir, runs_root=args.runs_root, progress=progress,
                                                        **overrides)))
        cfg = replay_config(args.run_dir, runs_root=args.runs_root, **overrides)
        progress(f"replaying {args.run_dir}: scenario {cfg.scenario}, seed {cfg.seed}, {len(cfg.schedule)} actions")
    return _finish(_logged(lambda: run_scenario(cfg, progress=progress)))


def _logged(run):
    """`run()`'s result, its progress lines kept in its run directory's logs/progress.log too, as a suite's are."""
    from harness.run import progress as lines
    from harness.record.rundir import RunDir
    with lines.capture(lines.RunLog("run")) as own:
        result = run()
    own.keep(RunDir(result.run_dir).logs_dir / lines.PROGRESS_LOG)
    return result


if __name__ == "__main__":
    sys.exit(main())
