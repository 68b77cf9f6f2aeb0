r"""delicious (MULAN split; needs the data directory): implicit CD, sized for 983 labels.

Run: python -m implicit_jax.main --config=configs/delicious.py --workdir=/tmp/implicit_jax/delicious \
       --config.data.data_dir=PATH/TO/data     (a folder holding mulan/delicious/...)
Reached: see docs/mlc_results.md (scripts/reproduce_mlc.py).
"""

from configs import bibtex


def get_config():
  c = bibtex.get_config()
  c.data.name = 'delicious'
  c.num_epochs = 10
  return c
