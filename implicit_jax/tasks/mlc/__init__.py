"""Multi-label classification: MULAN/FunCat benchmarks (bibtex, delicious, genbase, cal500, spo_fun) or your own
files, as a task of the engine.

Output space: ``Binary((num_labels,))``, one Bernoulli unit per label. Networks: ``models.MLPInferenceNet`` and
``models.MLCEnergy`` sized by ``config.model``. Evaluator: ``evaluator.F1Evaluator`` (example F1 at 0.5 selects
the best epoch; the threshold tuned on dev is the calibration). The data work is ``datasets.load_mlc``; readers
(``arff``), splits (``splits``), TFDS builders (``tfds_builders``), the embedded bibtex (``embedded/``), metrics
(``metrics``) and the energy analysis (``analysis``) live beside it.
"""

import ml_collections

import numpy as np

from implicit_jax.spaces.binary import Binary
from implicit_jax.tasks import Task
from implicit_jax.tasks.mlc import datasets, files
from implicit_jax.tasks.mlc.evaluator import F1Evaluator
from implicit_jax.tasks.mlc.models import MLCEnergy, MLPInferenceNet


def model_config() -> ml_collections.ConfigDict:
  """``config.model``: the inference net A_theta and the energy E_phi (``models.py``)."""
  m = ml_collections.ConfigDict()
  m.inference_hidden = (128,)       # A_theta: hidden widths of the MLP inference net
  m.activation = 'relu'             # A_theta nonlinearity
  m.dropout = 0.0                   # A_theta dropout after each hidden layer (training only)
  m.linear_skip = False             # A_theta: add a linear map of x to the logits (contains BR logistic regression)
  m.energy_feature_hidden = (128,)  # E_phi: hidden widths of the feature MLP b(x)
  m.energy_feature_dim = 128        # E_phi: width of b(x)
  m.global_hidden = 16              # E_phi: rows of M in v^T softplus(M y)
  m.energy_activation = 'softplus'  # E_phi nonlinearity (smooth: the implicit gradient needs H)
  return m


def data_config() -> ml_collections.ConfigDict:
  """``config.data`` of the MULAN/FunCat datasets (``datasets.py``)."""
  d = ml_collections.ConfigDict()
  d.name = 'bibtex'        # 'bibtex', 'delicious', 'genbase', 'cal500', 'spo_fun' or 'custom' (files below)
  d.data_dir = ''          # folder with mulan/<name>/..., funcat/...; '' = $IMPLICIT_JAX_DATA_DIR (bibtex: embedded)
  d.protocol = 'official'  # 'official' (the dataset's train/test) or 'resplit' (pool all, stratified 60/20/20)
  d.dev_fraction = 0.1     # official protocol: share of train held out as dev (spo_fun uses its valid split)
  d.split_seed = 0         # seeds the dev hold-out and stratified splits (separate from the model seed)
  d.dev_fold = -1          # -1: the seeded dev_fraction hold-out; k >= 0: dev is fold k of round(1 / dev_fraction)
                           # folds of a split_seed permutation of the training rows (k-fold cross-validation, as
                           # implicit_jax.tune runs on a small file; datasets.py). Refused with spo_fun's valid split
  d.train_file = ''        # custom only: training file, absolute or relative to data_dir
  d.test_file = ''         # custom only: test file; '' = split train stratified 60/20/20
  d.xml_file = ''          # custom only, MULAN: XML label list; '' = MEKA -C header or num_labels
  d.num_labels = 0         # custom only, MULAN without XML or -C: the last num_labels attributes are labels
  d.format = 'mulan'       # custom only: 'mulan' (MULAN/MEKA ARFF) or 'clus' (Clus hierarchical ARFF)
  d.source = 'raw'         # 'raw' (the ARFF readers) or 'tfds' (tfds_builders.py; data_dir = their manual dir)
  d.tfds_dir = ''          # tfds only: where prepared TFDS data lives; '' = $TFDS_DATA_DIR or ~/tensorflow_datasets
  d.standardise = 'auto'   # z-score features with train statistics (missing ones mean-imputed): 'auto' unless they
                           # are binary or sparse (>= 90% zeros), 'always' or 'never' (datasets.py); the choice is
                           # recorded in metrics.json (task_info) and repeated by evaluate and predict
  d.empty_f1 = 1.0         # example F1 of a row with no gold and no predicted label: 1.0 (SPEN, InfNet, this
                           # project's tables) or 0.0 (scikit-learn's, hence DVN's and SEAL's code)
  return d


def default_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.data, c.model = data_config(), model_config()
  return c


def check_config(config) -> None:
  """Settings that must hold before any data is read."""
  data = config.data
  # Model selection and the tuned threshold both need a dev split.
  if data.protocol == 'official' and not 0 < data.dev_fraction < 1:
    raise ValueError(f'config.data.dev_fraction must be in (0, 1): best-epoch selection and the tuned threshold '
                     f'need a dev split, got {data.dev_fraction}')
  if 0 < data.dev_fraction < 1:
    datasets.check_dev_fold(data.get('dev_fold', -1), data.dev_fraction)
  # A shipped dataset's config holds the settings chosen on that dataset, which can move another file's score more
  # than the method does; configs/custom.py's were chosen across datasets (docs/custom_defaults.md). One route.
  chosen_on = config.get('chosen_on', '')
  if data.name == 'custom' and chosen_on:
    holding = (f'--config={config.config_file}: that file holds the settings chosen on {chosen_on}'
               if config.get('config_file') else f'the settings chosen on {chosen_on} (config.chosen_on)')
    raise ValueError(f'config.data.name=custom with {holding}; a file of your own is read by '
                     '--config=configs/custom.py, whose defaults were chosen across the shipped datasets '
                     '(docs/custom_defaults.md)')


def mlc_task(name: str, splits: dict, num_labels: int, config, info: dict, names: dict | None = None,
             preprocess: dict | None = None) -> Task:
  """A multi-label ``Task`` on ``splits`` (``{split: (x [N, D], y [N, L])}``), networks from ``config.model``."""
  m = config.model
  if not 0.0 <= m.dropout < 1.0:
    raise ValueError(f'model.dropout must be in [0, 1), got {m.dropout}')

  def make_inference_net(heads: int = 1):
    return MLPInferenceNet(num_labels, tuple(m.inference_hidden), m.activation, m.dropout, heads,
                           bool(m.linear_skip))

  def make_energy():
    return MLCEnergy(num_labels, tuple(m.energy_feature_hidden), m.energy_feature_dim, m.global_hidden,
                     m.energy_activation)

  return Task(name, {s: {'x': x, 'y': y} for s, (x, y) in splits.items()}, Binary((num_labels,)),
              make_inference_net, make_energy, F1Evaluator(config.data.get('empty_f1', 1.0)), score='f1', info=info,
              names=names or {}, preprocess=preprocess or {})


def make_task(config) -> Task:
  check_config(config)
  d = config.data
  splits, info = datasets.load_mlc(
      d.name, d.data_dir, d.protocol, d.dev_fraction, d.split_seed, dev_fold=d.get('dev_fold', -1),
      train_file=d.train_file,
      test_file=d.test_file, xml_file=d.xml_file, num_labels=d.num_labels, file_format=d.format,
      source=d.source, tfds_dir=d.tfds_dir, standardise=d.standardise)
  # Kept on the task and recorded in data.json (what predict repeats), out of metrics.json.
  names, preprocess = info.pop('names', {}), info.pop('preprocess', {})
  return mlc_task(d.name, splits, info['num_labels'], config, info, names, preprocess)


# The predict command line ---------------------------------------------------------------------------------


def read_inputs(run, path: str):
  """An ARFF file in the run's dataset format, features transformed as the run's training features were: labels
  and features matched by name, nominal values by value, standardised with the run's recorded statistics.

  Returns ``({'x': [N, D]}, the run's label names)``."""
  from implicit_jax.engine import workdir as workdir_lib  # pylint: disable=import-outside-toplevel
  names, preprocess = workdir_lib.recorded_inputs(run.workdir, run.task)
  data = datasets.read_for_prediction(
      path, files.file_format(run.config.data.name, run.config.data.format), label_names=names['y'],
      feature_names=names['x'], nominal=preprocess.get('nominal'), statistics=preprocess.get('standardisation'))
  return {'x': data.x.astype(np.float32)}, list(names['y'])


def format_predictions(run, pred: np.ndarray, names, threshold: float) -> list[str]:
  """One line per example: its predicted label names, comma-separated (an empty line predicts none)."""
  names = names or [str(j) for j in range(run.task.space.units)]
  return [','.join(names[j] for j in np.flatnonzero(row)) for row in run.task.space.decode(pred, threshold)]

