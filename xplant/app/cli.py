"""Command line: a thin argparse layer over the public API.

    xplant run       the main job (PLANT vs baselines; CodiEsp, a named dataset or your files)
    xplant predict   label new documents with a saved model
    xplant report    an HTML report of a run folder
    xplant ablate    PLANT's switches and the low-data curve on CodiEsp
    xplant fit       fit one model and save it (dataset or your files; a row or a config)
    xplant evaluate  score a saved model on labelled data
    xplant train     the same as fit; with --config cfg.yaml, one process or many
                     (torchrun / deepspeed launchers; see "Scaling out" in the user guide)
"""

import argparse
import sys


def _data_args(args):
    from ._sources import data_args_from
    return data_args_from(args.dataset, train=args.train, dev=args.dev, test=args.test,
                          data_home=args.data_home, codes=args.codes, language=args.language,
                          upper=args.upper, text_field=args.text_field,
                          labels_field=args.labels_field, id_field=args.id_field, sep=args.sep,
                          max_docs=args.max_docs, random_state=args.seed,
                          label_descriptions=args.label_descriptions,
                          catalogue=getattr(args, "labels", "default"),
                          evidence_field=getattr(args, "evidence_field", None))


def _run(args):
    from ._job import run_job
    from ._rows import parse_models
    models = None if not args.models else [r.display for r in parse_models(args.models)]
    run_job(args.output, _data_args(args), models=models, epochs=args.epochs,
            plant_epochs=args.plant_epochs, random_state=args.seed,
            verbose=0 if args.quiet else 1, report=args.report, resume=args.resume,
            overwrite=args.overwrite, isolate=not args.no_isolate, refit=args.refit,
            description_encoder=args.description_encoder, log=_logger(args))
    return 0


def _logger(args):
    return (lambda *a, **k: None) if getattr(args, "quiet", False) else print


def _add_field_options(g, *, labels=True, id_default=None):
    """The switches of the one file reader, the same for every command that reads files."""
    g.add_argument("--text-field", default="text", help="field (JSON key / TSV column) of the text")
    if labels:
        g.add_argument("--labels-field", default="labels", help="field of the labels: a list of "
                                                                "strings or one string split by "
                                                                "--sep")
    g.add_argument("--id-field", default=id_default,
                   help="field of the document ids (default: "
                        + (f"{id_default!r}; rows without it are numbered 0, 1, ...)"
                           if id_default else "none: FILE:ROW)"))
    if labels:
        g.add_argument("--sep", default="|", help="separator of labels given as one string")
        g.add_argument("--upper", action="store_true",
                       help="upper-case the labels of your files (codes that are "
                            "case-insensitive)")


def _add_data_options(r, *, dataset_help):
    from ..datasets import CODIESP_LANGUAGES
    g = r.add_argument_group("data (a named dataset, or your own files)")
    g.add_argument("--dataset", help=dataset_help)
    g.add_argument("--train", help="your training file: JSON lines (.jsonl) or TSV (.tsv) with "
                                   "a text and a labels field")
    g.add_argument("--dev", help="your dev file (default: a seeded, iterative-stratified 10%% "
                                 "of --train)")
    g.add_argument("--test", help="your test file (default: none; dev scores are reported, "
                                  "marked optimistic)")
    _add_field_options(g)
    g.add_argument("--evidence-field", metavar="FIELD",
                   help="field of your documents' gold evidence (JSON lines): a list of "
                        "{\"label\": L, \"spans\": [[start, end], ...]}, character offsets "
                        "into the text field, end exclusive; the mention matcher learns from "
                        "it (default: none)")
    g.add_argument("--label-descriptions", metavar="FILE",
                   help="your labels' descriptions: JSON lines {\"label\", \"description\", "
                        "\"synonyms\"?, \"parents\"?} or a TSV with label and description "
                        "columns (synonyms and parents cells list items separated by a vertical "
                        "bar); the "
                        "descriptions row needs them, or a --labels catalogue that names the "
                        "labels")
    g.add_argument("--labels", default="default", metavar="CATALOGUE",
                   help="the open label space: the labels of train and dev, then every other "
                        "code of a catalogue: icd10cm, icd10pcs, eurovoc (from --data-home), or "
                        "a label file (JSON lines {\"label\", \"description\", \"synonyms\"?, "
                        "\"parents\"?} or a TSV); 'none' for train and dev labels alone; "
                        "'default' (the default): CodiEsp's code-set catalogue (icd10cm for D, "
                        "icd10pcs for P), none for other data; 'all-splits' for CodiEsp's "
                        "closed space of earlier releases, the codes of all three splits, test "
                        "included (optimistic: it tells the model which codes test holds). "
                        "The description rows rank the catalogue; xplant fit takes it for the "
                        "descriptions row only")
    g.add_argument("--codes", default="D", choices=["D", "P", "DP"], help="CodiEsp codes")
    g.add_argument("--language", default=None, choices=list(CODIESP_LANGUAGES),
                   help="CodiEsp's text for every row: the English translation (en), the "
                        "Spanish original (es), or both joined (both); the mention matcher "
                        "reads the Spanish its evidence indexes whichever is chosen. Default: "
                        "the dataset's setting, the Spanish original, with the English "
                        "translation for the description source (the ICD-10 names are "
                        "English)")
    g.add_argument("--data-home", help="folder of a named dataset (EURLEX57K and MIMIC need it; "
                                       "CodiEsp defaults to the bundled copy)")
    g.add_argument("--max-docs", type=int, help="first N documents of each split (smoke run)")


def _fit(args):
    from ._fit import fit_model
    fit_model(args.output, _data_args(args), args.model, params_file=args.params,
              epochs=args.epochs, plant_epochs=args.plant_epochs, random_state=args.seed,
              verbose=0 if args.quiet else 1, overwrite=args.overwrite, log=_logger(args))
    return 0


def _evaluate(args):
    from ._fit import evaluate_model
    evaluate_model(args.model, args.input, args.output, upper=args.upper,
                   text_field=args.text_field, labels_field=args.labels_field,
                   id_field=args.id_field, sep=args.sep, overwrite=args.overwrite,
                   log=_logger(args))
    return 0


def _predict(args):
    from ._predict import predict_file
    n = predict_file(args.model, args.input, args.output, fmt=args.format, top_k=args.top_k,
                     evidence=args.evidence, overwrite=args.overwrite,
                     text_field=args.text_field, id_field=args.id_field)
    print(f"wrote {n} documents to {args.output}")
    return 0


def _report(args):
    from ..report import render_report
    print(f"wrote {render_report(args.run_dir, out=args.out, overwrite=args.overwrite)}")
    return 0


def _ints(text):
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def _ablate(args):
    from ._ablate import run_ablation
    run_ablation(args.output, dataset=args.dataset, codes=args.codes, language=args.language,
                 data_home=args.data_home, single_seed_above=args.single_seed_above,
                 epochs=args.epochs, plant_epochs=args.plant_epochs, sizes=args.sizes,
                 seeds=args.seeds, max_docs=args.max_docs, dev_docs=args.dev_docs,
                 max_length=args.max_length, min_epoch_docs=args.min_epoch_docs,
                 max_epoch_docs=args.max_epoch_docs,
                 switches=not args.no_switches,
                 dev_choices=not args.no_dev_choices, resume=args.resume,
                 overwrite=args.overwrite,
                 curve=not args.no_curve, isolate=not args.no_isolate, num_threads=args.threads,
                 verbose=0 if args.quiet else 1)
    return 0


def build_parser():
    p = argparse.ArgumentParser(prog="xplant", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("train", help="train one model: the same as xplant fit; with --config "
                                 "cfg.yaml, the launcher job (DeepSpeed/torchrun; see "
                                 "\"Scaling out\" in the user guide)")
    for add in (_add_run_parser, _add_fit_parser, _add_evaluate_parser, _add_predict_parser,
                _add_report_parser, _add_ablate_parser):
        add(sub)
    return p


def _add_epoch_options(parser):
    """The Stage 2 and Stage 1 epoch budgets of ``run``, ``fit`` and ``ablate``."""
    from ._build import DEFAULT_EPOCHS, DEFAULT_PLANT_EPOCHS
    parser.add_argument("--epochs", type=int, default=DEFAULT_EPOCHS, help="Stage 2 epoch budget")
    parser.add_argument("--plant-epochs", type=int, default=DEFAULT_PLANT_EPOCHS,
                        help="Stage 1 epoch budget")


def _add_run_parser(sub):
    """``xplant run``: fit the rows, choose on dev, report test."""
    from ._rows import ROWS, find_row
    from ._run import DEFAULT_MODELS
    r = sub.add_parser("run", help="fit PLANT and baselines on any dataset; report test metrics")
    r.add_argument("--output", help="run folder (default ./xplant-runs/<timestamp>)")
    _add_data_options(r, dataset_help="codiesp (default), eurlex57k, mimic, or xc:DIR (an XC "
                                      "folder: feature-based rows only)")
    r.add_argument("--models", help="comma-separated rows, any case: "
                                    + ", ".join(f"{x.name} ({x.display})" for x in ROWS)
                                    + "; default: " + ",".join(find_row(m).name
                                                               for m in DEFAULT_MODELS))
    _add_epoch_options(r)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--quiet", action="store_true", help="print nothing but errors")
    r.add_argument("--report", action="store_true", help="also write report.html")
    r.add_argument("--resume", action="store_true",
                   help="continue the interrupted run in --output: finished models are kept "
                        "(when the input files are unchanged), neural fits continue from their "
                        "last epoch checkpoint")
    r.add_argument("--overwrite", action="store_true",
                   help="remove the earlier run's files in --output and start afresh")
    r.add_argument("--refit", action=argparse.BooleanOptionalAction, default=None,
                   help="also refit the neural rows, the SVM row and PLANT's fused + "
                        "descriptions row on train + dev with every choice made on dev fixed, "
                        "a neural row for the epoch count its first fit chose, reported as "
                        "'<row> (refit)' rows; the refit of the row chosen on dev is the "
                        "run's model. Default: on for CodiEsp (the CLEF protocol), off "
                        "elsewhere (it more than doubles the neural cost)")
    r.add_argument("--description-encoder", default="minilm", metavar="SPEC",
                   help="sentence encoder of the description source (PLANT's fused + "
                        "descriptions row): minilm (the bundled MiniLM-L6; default), "
                        "hf:<folder> (a local Hugging Face encoder, e.g. a multilingual one "
                        "for --language es), or none (TF-IDF alone, faster)")
    r.add_argument("--no-isolate", action="store_true",
                   help="fit every model in this process (faster start; fit times and peak "
                        "memory then share one process)")
    r.set_defaults(func=_run)


def _add_fit_parser(sub):
    """``xplant fit``: fit one model and save it."""
    from ._rows import ROWS
    f = sub.add_parser("fit", help="fit one model on a dataset or your files; save it for "
                                   "xplant predict (also: xplant train without --config)")
    f.add_argument("--model", required=True,
                   help="a row (" + ", ".join(x.name for x in ROWS) + ") or a JSON/YAML file "
                        '{"model": row, "params": {...}}')
    f.add_argument("--params", help="JSON/YAML file of estimator parameters for the row")
    f.add_argument("--output", required=True, help="folder to save the model to")
    f.add_argument("--overwrite", action="store_true", help="replace an existing --output")
    _add_data_options(f, dataset_help="codiesp (default), eurlex57k, mimic, or xc:DIR")
    _add_epoch_options(f)
    f.add_argument("--seed", type=int, default=0)
    f.add_argument("--quiet", action="store_true", help="print nothing but errors")
    f.set_defaults(func=_fit)


def _add_evaluate_parser(sub):
    """``xplant evaluate``: a saved model's metrics on labelled data."""
    e = sub.add_parser("evaluate", help="score a saved model on labelled data (metric table)")
    e.add_argument("--model", required=True, help="saved model folder")
    e.add_argument("--input", required=True, help="labelled .jsonl or .tsv file")
    e.add_argument("--output", help="also write the report as JSON here")
    e.add_argument("--overwrite", action="store_true",
                   help="replace an existing --output file (never an input)")
    _add_field_options(e)
    e.add_argument("--quiet", action="store_true")
    e.set_defaults(func=_evaluate)


def _add_predict_parser(sub):
    """``xplant predict``: label documents with a saved model."""
    q = sub.add_parser("predict", help="label documents with a saved model")
    q.add_argument("--model", required=True, help="saved model folder (e.g. RUN/models/PLANT)")
    q.add_argument("--input", required=True,
                   help="a .jsonl or .tsv file (the reader of run, fit and evaluate), or a "
                        "folder of .txt files, one document each")
    q.add_argument("--output", required=True)
    q.add_argument("--format", default="jsonl", choices=["jsonl", "codiesp"])
    q.add_argument("--top-k", type=int, default=10)
    q.add_argument("--evidence", action="store_true",
                   help="add evidence spans (attention of a neural model; sentences matching "
                        "the description of a label the descriptions scored)")
    q.add_argument("--overwrite", action="store_true",
                   help="replace an existing output file (never the input)")
    _add_field_options(q, labels=False, id_default="id")
    q.set_defaults(func=_predict)


def _add_report_parser(sub):
    """``xplant report``: the HTML report of a run folder."""
    o = sub.add_parser("report", help="write report.html for a run folder")
    o.add_argument("run_dir")
    o.add_argument("--out", help="output folder (default: the run folder, whose report is "
                                 "rewritten)")
    o.add_argument("--overwrite", action="store_true",
                   help="replace an existing report.html in --out")
    o.set_defaults(func=_report)


def _add_ablate_parser(sub):
    """``xplant ablate``: PLANT's switches and the low-data curve."""
    from ..datasets import CODIESP_LANGUAGES
    from ._ablate import DEFAULT_SEEDS, DEFAULT_SIZES, EURLEX_SINGLE_SEED_ABOVE, EURLEX_SIZES
    a = sub.add_parser("ablate", help="PLANT's switches and the low-data curve (CodiEsp, EURLEX57K)")
    a.add_argument("--output", help="output folder (default ./xplant-runs/ablate-<timestamp>)")
    a.add_argument("--dataset", default="codiesp", choices=["codiesp", "eurlex57k"])
    a.add_argument("--codes", default="D", choices=["D", "P", "DP"])
    a.add_argument("--language", default="en", choices=list(CODIESP_LANGUAGES))
    a.add_argument("--data-home", help="official CodiEsp folder (default: the bundled copy); "
                                       "the EURLEX57K folder (required with --dataset eurlex57k)")
    _add_epoch_options(a)
    a.add_argument("--sizes", type=_ints, default=None,
                   help=f"training sizes of the low-data curve (default: CodiEsp {list(DEFAULT_SIZES)}, "
                        f"EURLEX57K {list(EURLEX_SIZES)})")
    a.add_argument("--seeds", type=int, default=DEFAULT_SEEDS, help="subsets per size")
    a.add_argument("--single-seed-above", type=int, default=None,
                   help="sizes above this run with one seed (default: EURLEX57K "
                        f"{EURLEX_SINGLE_SEED_ABOVE}, CodiEsp none)")
    a.add_argument("--max-docs", type=int, help="first N documents of each split (smoke run)")
    a.add_argument("--dev-docs", type=int,
                   help="choose epochs and decision rules on N random dev documents "
                        "(test stays whole; cuts the dev pass of each epoch)")
    a.add_argument("--max-length", type=int, help="tokens read per document by every fit")
    a.add_argument("--min-epoch-docs", type=int,
                   help="each epoch passes over a smaller training subset several times, "
                        "to draw at least N documents (equal steps per epoch across sizes)")
    a.add_argument("--max-epoch-docs", type=int,
                   help="each epoch trains on a fresh random N-document subset of a larger "
                        "training set (with --min-epoch-docs N: the same steps at every size)")
    a.add_argument("--no-switches", action="store_true", help="skip the switch table")
    a.add_argument("--no-curve", action="store_true", help="skip the low-data curve")
    a.add_argument("--resume", action="store_true",
                   help="continue the interrupted run in --output (finished fits are kept)")
    a.add_argument("--overwrite", action="store_true",
                   help="remove the earlier run's files in --output and start afresh")
    a.add_argument("--no-dev-choices", action="store_true",
                   help="skip the rows that choose open defaults on dev (smoothing form, Stage 1 nDCG@k)")
    a.add_argument("--no-isolate", action="store_true", help="fit in this process")
    a.add_argument("--threads", type=int, help="torch threads per fit")
    a.add_argument("--quiet", action="store_true")
    a.set_defaults(func=_ablate)


def build_train_parser():
    """The parser of ``xplant train --config`` (the launcher job), which owns its arguments."""
    from ._train import _parser
    return _parser()


def route(argv):
    """The command an ``xplant`` command line runs: ``(name, argv)``, nothing parsed yet.

    ``xplant train`` without ``--config`` is ``xplant fit``; with it, the
    launcher job reads the arguments (``name`` is "train" and ``argv`` its
    arguments, for :func:`build_train_parser`); every other command line is
    returned whole, for :func:`build_parser`.
    """
    argv = list(argv)
    if argv[:1] == ["train"] and not any(a == "--config" or a.startswith("--config=")
                                         for a in argv[1:]):
        argv = ["fit"] + argv[1:]                # one command: train == fit without --config
    if argv[:1] == ["train"]:
        return "train", argv[1:]
    return "xplant", argv


def main(argv=None):
    """Run the ``xplant`` command line ``argv`` (default: ``sys.argv[1:]``); return its exit code.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after ``xplant``, e.g. ``["run", "--quiet"]``.

    Returns
    -------
    int
        0 on success; 2 on bad input (the message, without a traceback, on
        standard error) or bad arguments (argparse exits with 2).
    """
    name, argv = route(sys.argv[1:] if argv is None else argv)
    if name == "train":
        # The launcher owns its arguments (deepspeed appends --local_rank).
        from ._train import main as train_main
        return train_main(argv)
    args = build_parser().parse_args(argv)
    if getattr(args, "quiet", False):
        import os
        from .._progress import QUIET_ENV
        os.environ[QUIET_ENV] = "1"          # native libraries and child processes too
    try:
        return args.func(args)
    except (ValueError, FileNotFoundError, FileExistsError, TypeError) as exc:
        # bad input: the message names the file, the line and the fix; no traceback
        print(f"xplant {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
