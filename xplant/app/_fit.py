"""``xplant fit`` (one model, saved for ``xplant predict``) and ``xplant evaluate``."""

import json
import warnings
from pathlib import Path

import numpy as np
from .._params import final_step


def read_model_spec(model, params_file=None):
    """The row and estimator parameters of ``xplant fit --model``.

    Parameters
    ----------
    model : str
        A row name (``plant``, ``svm``, any case, or a display name), or a
        JSON/YAML file ``{"model": row, "params": {...}}`` (``params`` as in
        :func:`xplant.app.build_model`).
    params_file : str or None
        A JSON/YAML file of estimator parameters for the row.

    Returns
    -------
    row : xplant.app._rows.Row
    params : dict

    Raises
    ------
    ValueError
        An unknown row, or a config that is not an object with ``model``.
    FileNotFoundError
        A config file that does not exist.
    """
    from ._rows import find_row

    def read(path):
        from .._files import read_json_object
        return read_json_object(path, "an object of parameters (or name it .yaml for YAML)",
                                yaml=True)

    params = {}
    if str(model).lower().endswith((".json", ".yaml", ".yml")):
        cfg = read(model)
        if "model" not in cfg:
            raise ValueError(f"{model}: the config needs a 'model' entry naming a row "
                             "(e.g. {\"model\": \"plant\", \"params\": {\"max_epochs\": 5}})")
        row, params = find_row(cfg["model"]), dict(cfg.get("params") or {})
    else:
        row = find_row(model)
    if params_file:
        params.update(read(params_file))
    return row, params


def fit_model(output, data_args, model, *, params_file=None, epochs=None, plant_epochs=None,
              random_state=0, verbose=1, overwrite=False, log=print):
    """Fit one row on train, choose on dev, save it to ``output`` for ``xplant predict``.

    The same fit as a row of ``xplant run`` (grid and decision rule chosen on
    dev; dev carved from train when there is no dev file), in this process.

    Returns
    -------
    info : dict
        ``{"model", "saved_to", "dev_MAP", "fit_seconds", ...}``, also
        written as ``fit.json`` beside the saved model.

    Raises
    ------
    FileExistsError
        When ``output`` exists and ``overwrite`` is False.
    ValueError
        A catalogue (``data_args["catalogue"]``, ``--labels``) for a row
        that cannot rank one (only the rows of
        :attr:`xplant.app._rows.Row.open_space` save an open-space model).
    """
    from ._job import model_specs
    from ._build import DEFAULT_EPOCHS, DEFAULT_PLANT_EPOCHS
    from ._fit_row import _fit_one
    from ._splits import load_splits
    from .._files import replace_folder, sibling_tmp, write_text
    from .._outputs import check_model_output, data_paths
    row, params = read_model_spec(model, params_file)
    _check_catalogue_row(row, data_args)
    output = check_model_output(output, data=data_paths(data_args), overwrite=overwrite)
    splits = load_splits(**data_args)
    source = (data_args.get("files") or {}).get("train", data_args.get("dataset"))
    spec = model_specs([row], splits["train"].get("texts") is None, splits, source)[0]
    spec["params"] = {**spec.get("params", {}), **params}
    from ._fit_row import DEV_GRIDS
    grid = DEV_GRIDS.get(row.display, {})
    if any(key.split("__")[-1] in params for key in grid):
        spec["grid"] = {}            # the user fixed what dev would choose (e.g. C)
    log(f"fitting {row.display} on {splits['train'].Y.shape[0]} documents "
        f"({splits['train'].Y.shape[1]} labels), choosing on {splits['dev'].Y.shape[0]} dev "
        "documents")
    model_args = {"epochs": DEFAULT_EPOCHS if epochs is None else epochs,
                  "plant_epochs": DEFAULT_PLANT_EPOCHS if plant_epochs is None else plant_epochs,
                  "random_state": random_state, "verbose": verbose}
    tmp = sibling_tmp(output)       # the old model stays until the new one is complete
    try:
        out = _fit_one(spec, data_args, model_args, str(tmp))
        if "not_saved" in out["info"]:
            raise TypeError(f"{row.display} was fitted but cannot be saved: "
                            f"{out['info']['not_saved']}")
        from .._saved import decision_record
        choice = out["rule"].get("choices", {}).get("decision")
        info = {"model": row.name, "display": row.display, "params": out["params"],
                "decision": decision_record(out["rule"]),
                "decision_choice": None if choice is None else choice.to_dict(),
                **out["info"], "saved_to": str(output),
                "fit_seconds": out["fit_seconds"]}
        write_text(tmp / "fit.json", json.dumps(info, indent=1, default=float))
        replace_folder(tmp, output)
    except BaseException:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    log(f"saved {row.display} to {output} (dev MAP {100 * info['dev_MAP']:.1f}, fit "
        f"{info['fit_seconds']:.0f} s); predict with: xplant predict --model {output} "
        "--input FILE --output FILE")
    return info


def _check_catalogue_row(row, data_args):
    """Refuse ``xplant fit --labels CATALOGUE`` for a row whose saved model cannot rank a
    catalogue's codes (:attr:`xplant.app._rows.Row.open_space`), naming the row."""
    from ._rows import ROWS
    catalogue = data_args.get("catalogue", "default")
    if catalogue in (None, "none", "default") or row.open_space:
        return
    able = ", ".join(r.name for r in ROWS if r.open_space)
    raise ValueError(f"--labels {catalogue}: the row {row.name!r} ({row.display}) ranks the "
                     "labels of train and dev only, so its saved model cannot use a catalogue; "
                     f"fit a row that ranks a catalogue's codes ({able}: xplant fit --model "
                     f"descriptions --labels ...), or leave --labels out")


def evaluate_model(model_dir, input_path, output=None, *, upper=False, text_field="text",
                   labels_field="labels", id_field=None, sep="|", overwrite=False, log=print):
    """Score a saved model on labelled data under its saved decision rule.

    Parameters
    ----------
    model_dir : str or Path
        Any saved xplant model folder.
    input_path : str or Path
        Labelled JSON lines or TSV (as for ``xplant run --test``).
    output : str or Path or None
        Also write the report as JSON here: checked before anything is read
        by the rule of every output (:func:`xplant._outputs.check_output`):
        never the input or inside the model folder, and an existing file
        only with ``overwrite``.
    upper, text_field, labels_field, id_field, sep
        As for ``xplant run``.
    overwrite : bool, default=False
        Replace an existing ``output`` file.

    Returns
    -------
    report : dict
        ``{"model", "row", "input": {path, sha256, bytes}, "n_documents",
        "decision", "unknown_labels", "metrics"}``; ``row`` is the results
        row the folder reproduces (its ``row.json``; None for a folder
        saved otherwise); ``metrics`` from :func:`xplant.metrics.xmtc_report`.

    Raises
    ------
    FileExistsError
        When ``output`` exists and ``overwrite`` is False.
    ValueError
        When ``output`` is the input or lies inside the model folder; any
        input error of the reader; a file in which no document has a label.

    Warns
    -----
    UserWarning
        Labels of the file that the model does not know; they count as
        misses.
    """
    from .._files import write_text
    from .._outputs import check_output
    from .._saved import decision_record
    from ..persistence import load_saved
    from ._sources import _check_file, _read_user, check_split, file_record
    from ._tables import format_table, rule_label
    from ..metrics import xmtc_report
    path = _check_file(input_path, "--input")
    if output:
        output = check_output(output, inputs=[path, model_dir], overwrite=overwrite)
    model, decision = load_saved(model_dir)
    data = _read_user({"test": str(path)}, {"text_field": text_field,
                                            "labels_field": labels_field,
                                            "id_field": id_field, "sep": sep}, upper)["test"]
    check_split(data, "test", path)
    from ._predict import with_model_fields          # a mention matcher's field, where it reads one
    data.texts = with_model_fields(model, path, data.texts, id_field=id_field)
    Y, scores, y_pred, unknown = _aligned_scores(model, decision, data, path)
    n = len(data.texts)
    final = final_step(model)
    freq = np.concatenate([np.asarray(final.label_frequency_), np.zeros(len(unknown))])
    metrics = xmtc_report(Y, scores, y_pred=y_pred, label_frequency=freq,
                          n_train_documents=int(final.n_train_documents_))
    from ._rows import saved_row
    report = {"model": str(Path(model_dir).resolve()), "row": saved_row(model_dir),
              "input": file_record(path),
              "n_documents": n, "decision": decision_record(decision), "unknown_labels": unknown,
              "metrics": metrics}
    log(f"{path}: {n} documents, decision rule {rule_label(decision)}"
        f" (k={decision['k']}, threshold={decision['threshold']:.3g}); percent:\n")
    log(format_table([{"name": report["row"] or Path(model_dir).name, "metrics": metrics,
                       "rule": decision["rule"], "k": decision["k"],
                       "threshold": decision["threshold"], "fit_seconds": 0.0}]))
    if output:
        write_text(output, json.dumps(report, indent=1, default=float))
        log(f"wrote {output}")
    return report


def _aligned_scores(model, decision, data, path):
    """The labels of a labelled file against a saved model (:func:`evaluate_model`).

    Returns the targets, the model's ranking scores and its predictions
    under its rule, over the model's labels then the file's unknown ones;
    an unknown label (warned about) is scored -inf and never predicted, so
    its gold positives are misses in every metric. Sparse scores stay
    sparse (:func:`xplant._saved.ranking_scores`): a label they do not
    store is never ranked, as in :func:`xplant.metrics.xmtc_report` on the
    model's own scores.
    """
    from .._saved import decide, label_names, ranking_scores
    from ..datasets import align_label_space
    from ..metrics import pad_scores
    aligned = align_label_space(label_names(model), data.Y, data.label_names)
    unknown = aligned.unknown_labels.tolist()
    if unknown:
        warnings.warn(f"{path}: {len(unknown)} label(s) unknown to the model count as misses: "
                      f"{', '.join(unknown[:20])}{' ...' if len(unknown) > 20 else ''}",
                      UserWarning, stacklevel=3)
    Y = aligned.Y
    y_pred = decide(model, data.texts, decision)      # its own scale: probabilities or not
    scores = ranking_scores(model, data.texts)          # the ranking of xplant predict
    if unknown:                                          # never ranked, never predicted
        scores = pad_scores(scores, scores.shape[1] + len(unknown))
        y_pred = pad_scores(y_pred, y_pred.shape[1] + len(unknown))
    return Y, scores, y_pred, unknown
