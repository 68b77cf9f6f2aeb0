"""Multi-label classification benchmarks (bibtex, delicious, genbase, cal500, spo_fun, or your own files).

The data work is ``implicit_jax.data.mlc_datasets.load_mlc``; this module maps ``config.data`` onto it.
``default_data_config()`` documents each field; configs start from it and override what changes.
"""

import ml_collections

from implicit_jax.data import mlc_datasets
from implicit_jax.tasks import Task


def default_data_config() -> ml_collections.ConfigDict:
  d = ml_collections.ConfigDict()
  d.name = 'bibtex'        # 'bibtex', 'delicious', 'genbase', 'cal500', 'spo_fun' or 'custom' (files below)
  d.data_dir = ''          # folder with mulan/<name>/..., funcat/...; '' = $IMPLICIT_JAX_DATA_DIR (bibtex: embedded)
  d.protocol = 'official'  # 'official' (the dataset's train/test) or 'resplit' (pool all, stratified 60/20/20)
  d.dev_fraction = 0.1     # official protocol: share of train held out as dev (spo_fun uses its valid split)
  d.split_seed = 0         # seeds the dev hold-out and stratified splits (separate from the model seed)
  d.train_file = ''        # custom only: training file, absolute or relative to data_dir
  d.test_file = ''         # custom only: test file; '' = split train stratified 60/20/20
  d.xml_file = ''          # custom only, MULAN: XML label list; '' = MEKA -C header or num_labels
  d.num_labels = 0         # custom only, MULAN without XML or -C: the last num_labels attributes are labels
  d.format = 'mulan'       # custom only: 'mulan' (MULAN/MEKA ARFF) or 'clus' (Clus hierarchical ARFF)
  d.source = 'raw'         # 'raw' (the ARFF readers) or 'tfds' (data/tfds_builders.py; data_dir = their manual dir)
  d.tfds_dir = ''          # tfds only: where prepared TFDS data lives; '' = $TFDS_DATA_DIR or ~/tensorflow_datasets
  return d


def make_task(config) -> Task:
  d = config.data
  splits, info = mlc_datasets.load_mlc(
      d.name, d.data_dir, d.protocol, d.dev_fraction, d.split_seed, train_file=d.train_file,
      test_file=d.test_file, xml_file=d.xml_file, num_labels=d.num_labels, file_format=d.format,
      source=d.source, tfds_dir=d.tfds_dir)
  return Task(d.name, splits, info['num_features'], info['num_labels'], info=info)
