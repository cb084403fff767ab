"""Command line: a thin argparse layer over the public API.

    xplant run       the main job (PLANT vs baselines on CodiEsp)
"""

import argparse
import sys


def _run(args):
    from ._run import DEFAULT_MODELS, run_main_job
    models = DEFAULT_MODELS if not args.models else tuple(args.models.split(","))
    run_main_job(args.output, codes=args.codes, language=args.language, data_home=args.data_home,
                 models=models, epochs=args.epochs, plant_epochs=args.plant_epochs,
                 random_state=args.seed, verbose=0 if args.quiet else 1,
                 max_docs=args.max_docs)
    return 0


def build_parser():
    from ._run import DEFAULT_EPOCHS, DEFAULT_PLANT_EPOCHS
    p = argparse.ArgumentParser(prog="xplant", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="fit PLANT and baselines on CodiEsp; report test metrics")
    r.add_argument("--output", help="run folder (default ./xplant-runs/<timestamp>)")
    r.add_argument("--codes", default="D", choices=["D", "P", "DP"])
    r.add_argument("--language", default="en", choices=["en", "es"])
    r.add_argument("--data-home", help="official CodiEsp folder (default: the bundled copy)")
    r.add_argument("--models", help="comma-separated subset of the default models")
    r.add_argument("--epochs", type=int, default=DEFAULT_EPOCHS, help="Stage 2 epoch budget")
    r.add_argument("--plant-epochs", type=int, default=DEFAULT_PLANT_EPOCHS,
                   help="Stage 1 epoch budget")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--max-docs", type=int, help="first N documents of each split (smoke run)")
    r.add_argument("--quiet", action="store_true")
    r.set_defaults(func=_run)
    return p


def main(argv=None):
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
