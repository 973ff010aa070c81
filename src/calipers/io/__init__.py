"""Read prediction files: probabilities or logits, and the true labels.

:func:`read_predictions` reads one file into a :class:`PredictionFile`. Nothing
is ever unpickled: NumPy files are opened with ``allow_pickle=False`` and an
array of Python objects is refused; PyTorch files are opened with
``torch.load(weights_only=True)``, which loads tensors and plain containers
but refuses any other pickled object without running it; Parquet files are
read with a pyarrow that does not unpickle extension types (14.0.1 or later).
The arrays are returned as they are stored; the value checks (rows on the
simplex, labels in range, ...) belong to :func:`calipers.check_predictions`,
which :meth:`PredictionFile.check` calls.

Formats
-------
``.npz`` (``np.savez``)
    One array of probabilities or logits and, usually, one of labels. Keys are
    recognised case-insensitively:

    ==============  ===============================================================
    role            accepted keys
    ==============  ===============================================================
    probabilities   ``probs``, ``probabilities``, ``proba``, ``p``, ``y_prob``, ``y_proba``
    logits          ``logits``, ``scores``
    labels          ``labels``, ``label``, ``y``, ``targets``, ``target``, ``y_true``
    ==============  ===============================================================

    Two keys for the same role, or both probabilities and logits, are
    ambiguous: name the one to use (``probs_key=``, ``logits_key=``,
    ``labels_key=``; on the command line ``--probs-key``, ``--logits-key``,
    ``--labels-key``).
``.npy`` (``np.save``)
    One ``(n, k)`` array of probabilities (or ``(n,)`` P(y = 1) for a binary
    problem); logits with ``logits=True``. Labels come from ``labels_path``.
``.csv``
    Comma-separated, one row per sample, with a header row (required):

    * one label column named ``label`` (or ``labels``, ``y``, ``y_true``,
      ``target``, ``targets``; any case) holding class indices ``0..k-1`` or
      class names equal to the probability column names;
    * every other column is one class (a single column holds P(y = 1), or the
      logit, of a binary problem). Columns named with a common prefix and
      the class index (``p0, p1, ...``, ``prob_0, ...`` or ``0, 1, ...``) are
      put in index order; any other names (``cat, dog, ...``) are classes in
      file order. Columns named ``logit_0, logit_1, ...`` (or ``logit_cat``,
      ...) hold logits.

    Example::

        label,p0,p1,p2
        0,0.7,0.2,0.1
        2,0.1,0.3,0.6
``.parquet`` (needs ``pyarrow``, an optional dependency)
    Either the ``.csv`` layout (a label column and one numeric column per
    class, with the same names, order and logit rules; the values are read as
    float64), or one list-typed column holding a vector per row (``(n, k)``
    after stacking; every row the same length) and, optionally, a label
    column. With several list columns, the one holding the predictions is
    chosen by name as for ``.npz`` (``probs_key=``/``logits_key=`` to name
    it). A single list column named neither like the probabilities nor like
    the logits of the ``.npz`` table (nor ``logit...``) is a bare array: see
    *Probabilities or logits* below. Index columns written by pandas are
    ignored.
``.pt``, ``.pth`` (``torch.save``; needs ``torch``)
    Loaded with ``torch.load(path, weights_only=True, map_location="cpu")``,
    and holding one of

    * a tensor of predictions (labels from ``labels_path``): a bare array;
    * a dict of tensors, read exactly as an ``.npz`` file (same keys, same
      ``probs_key``/``logits_key``/``labels_key``);
    * a tuple or list ``(scores, labels)`` of two tensors, ``scores`` a bare
      array.

    ``bfloat16`` tensors are widened to ``float32`` (exactly); other dtypes
    are kept.

Probabilities or logits
-----------------------
The returned :attr:`PredictionFile.kind` says which was read, and
:attr:`PredictionFile.kind_basis` how it was decided:

``"argument"``
    ``logits=True``/``logits=False`` (``--logits``/``--probs``), or an
    explicit ``probs_key``/``logits_key``, was given; it always wins.
``"name"``
    The key (``.npz``, dicts in ``.pt``, Parquet list columns) or the column
    names (``logit_*`` in ``.csv``/``.parquet``) say it.
``"default"``
    The format's fixed convention: an ``.npy`` array, and ``.csv``/``.parquet``
    class columns not named ``logit*``, hold probabilities.
``"values"``
    A bare array (a tensor in a ``.pt`` file, the ``scores`` of a ``.pt``
    tuple, an unnamed Parquet list column) is read by the rule the
    recalibrators use: as probabilities only if every row lies on the
    probability simplex (entries in ``[-tol, 1 + tol]`` and each row summing
    to 1 within ``tol``, or within the rounding of values printed to d
    decimals; a 1-D array holds P(y = 1), so every value in
    ``[-tol, 1 + tol]``), and as logits only if some entry is below -0.5
    and at most half of the rows sum to 1 (no probability is that
    negative). ``tol`` is the default ``sum_tol`` of
    :func:`calipers.check_predictions`, ``max(1e-4, (log2(k) + 2) * eps)``
    with ``eps`` the machine epsilon of the stored dtype. Anything else
    (entries all in ``[0, 1]`` but a row not summing to 1; non-negative rows
    that are not probabilities, such as percentages or probabilities scaled
    by 1.01; entries only slightly negative; NaN or infinity) is
    ambiguous and raises :class:`PredictionFileError` asking for
    ``logits=True`` or ``logits=False``. The choice and its reason are written
    in :attr:`PredictionFile.note`.

Labels files (``labels_path``) may be ``.npy``, ``.npz`` (one array, or a
labels key as above), ``.pt``/``.pth`` (a tensor, or a dict with one entry or
a labels key), ``.parquet`` (one column, or a label column), or
``.csv``/``.txt`` with one label per line and an optional header line.

Each format has its own reader module (``calipers.io.npz``, ``npy``, ``csv``,
``parquet``, ``pt``, and ``labels_file``); what they share is in
``calipers.io.prediction_file`` (the result and the error), ``checks`` (numeric
arrays, shapes), ``kind`` (probabilities or logits), ``keys`` (named arrays),
``columns`` (one column per class) and ``sniff`` (what a refused file looks
like). :func:`read_prediction_chunks` reads the same files in chunks of rows
(``calipers.io.chunks``), for files larger than memory. Import from
``calipers.io`` itself: the modules are not a public path.

Regression predictions
----------------------
:func:`read_regression_file` reads Gaussian predictive distributions
N(mean, variance) and their targets (Gruber & Buettner 2022, §5) into a
:class:`RegressionFile`; :func:`is_regression_file` says whether a file names
such columns (the command line uses it to pick the regression table). One row
per target, in ``.csv`` (header row), ``.npz``, ``.parquet`` (one numeric
column per role) or ``.pt``/``.pth`` (a dict of 1-D tensors); ``.npy`` cannot
name its arrays and is refused. Names are matched in any case:

==============  ===============================================================
role            accepted keys and column names
==============  ===============================================================
mean            ``mean``, ``mu``, ``pred_mean``, ``prediction``
variance        ``var``, ``variance``, ``sigma2``, ``pred_var``
std             ``std``, ``sd``, ``sigma``, ``stddev``, ``pred_std``
targets         ``y``, ``target``, ``targets``, ``y_true``, ``label``
weights         ``weight``, ``sample_weight`` (optional)
==============  ===============================================================

Exactly one of a variance and a standard deviation: a file holding both is
refused unless ``variance_key=`` or ``std_key=`` says which to use (likewise
``mean_key=``, ``targets_key=``, ``weight_key=`` for names not recognised).
Example::

    mean,var,y
    0.3,1.2,0.1
    -1.0,0.5,-0.7

The values are checked by :func:`calipers.regression.check_gaussian`.

:func:`read_predictive_file` reads every kind of regression prediction into
a :class:`PredictiveFile`: a Gaussian (by :func:`read_regression_file`),
quantile columns (``q0.05``, ``quantile_0.05``, ``q5``, ``5%``, ``0.05``,
darts' ``target_q0.05``), a central interval (``lower``, ``upper`` and a
stated level) or samples (``sample_0, sample_1, ...`` or an ``(n, k)``
array ``samples``); :func:`predictive_file_kinds` says which kinds a file's
names could hold; :func:`read_point_forecast_file` reads point forecasts
(``y_pred``, ``forecast``, ...) and their targets.
"""

from __future__ import annotations

from .chunks import PredictionChunk, PredictionChunks, read_prediction_chunks
from .declared import DeclaredSize, declared_size
from .keys import LABELS_KEYS, LOGITS_KEYS, PROBS_KEYS
from .prediction_file import PredictionFile, PredictionFileError
from .predictive_file import (
    PredictiveFile,
    predictive_file_kinds,
    read_point_forecast_file,
    read_predictive_file,
)
from .read import read_predictions
from .regression_file import RegressionFile, is_regression_file, read_regression_file

__all__ = [
    "PredictionFile",
    "PredictionFileError",
    "read_predictions",
    "read_prediction_chunks",
    "PredictionChunk",
    "PredictionChunks",
    "PROBS_KEYS",
    "LOGITS_KEYS",
    "LABELS_KEYS",
    "RegressionFile",
    "read_regression_file",
    "is_regression_file",
    "PredictiveFile",
    "read_predictive_file",
    "predictive_file_kinds",
    "read_point_forecast_file",
    "declared_size",
    "DeclaredSize",
]

# The public names keep ``calipers.io`` as their module, as before this module became
# a package: in tracebacks, repr, pickles and the documentation. The methods follow
# their class, so that doctest finds their examples with it.
for _public in (
    PredictionFile,
    PredictionFileError,
    read_predictions,
    read_prediction_chunks,
    PredictionChunk,
    PredictionChunks,
    RegressionFile,
    read_regression_file,
    is_regression_file,
    PredictiveFile,
    read_predictive_file,
    predictive_file_kinds,
    read_point_forecast_file,
    declared_size,
    DeclaredSize,
):
    _public.__module__ = __name__
    for _member in vars(_public).values():
        if callable(_member) and hasattr(_member, "__module__"):
            _member.__module__ = __name__
del _public, _member
