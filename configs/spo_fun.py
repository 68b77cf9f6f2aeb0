r"""FunCat spo_FUN (Clus HMC; train/valid/test files; needs the data directory): implicit CD on 499 nodes.

Run: python -m implicit_jax.main --config=configs/spo_fun.py --workdir=/tmp/implicit_jax/spo_fun \
       --config.data.data_dir=PATH/TO/data     (a folder holding funcat/spo_FUN.*.arff)
Reached: implicit-cd test example-F1 6.28 @0.5, 24.48 tuned (1 seed); mbce test example-F1 4.81 @0.5, 25.69 tuned (1 seed); official split, docs/mlc_results.md.
"""

from implicit_jax.engine import config as config_lib


def get_config():
  c = config_lib.from_file('bibtex.py', relative_to=__file__)
  c.data.name = 'spo_fun'
  c.num_epochs = 20
  return c
