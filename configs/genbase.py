r"""genbase (MULAN split; needs the data directory): implicit CD.

Run: python -m implicit_jax.main --config=configs/genbase.py --workdir=/tmp/implicit_jax/genbase \
       --config.data.data_dir=PATH/TO/data
Reached: see docs/mlc_results.md (scripts/reproduce_mlc.py).
"""

from configs import bibtex


def get_config():
  c = bibtex.get_config()
  c.data.name = 'genbase'
  c.num_epochs = 40
  return c
