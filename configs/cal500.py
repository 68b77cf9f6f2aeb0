r"""CAL500 (no official split: seeded stratified 60/20/20; needs the data directory): implicit CD.

Run: python -m implicit_jax.main --config=configs/cal500.py --workdir=/tmp/implicit_jax/cal500 \
       --config.data.data_dir=PATH/TO/data
Rows:   --config=configs/cal500.py:ROW trains a row of the results tables (docs/mlc_results.md, mlc_ablation.md,
        baselines.md name each row's ROW); --config.seed=K --config.data.split_seed=K its seed K (the seed also
        draws the dev split). ROW = SYSTEM[,resplit]: SYSTEM is a name of implicit_jax/experiments/mlc.py's
        SYSTEMS or BASELINES, e.g. mbce, implicit-cd (this config as it is), implicit-ssvm,
        dvn, infnet+_stacked (a space written _);
        ",resplit": the paper's stratified 60/20/20 re-split of all rows.
"""

from implicit_jax.engine import config as config_lib
from implicit_jax.experiments import mlc


def get_config(arg=None):
  c = config_lib.from_file('bibtex.py', relative_to=__file__, arg='base')
  # normal_cg with 5 iterations (11 HVPs), as the MLC rows ran: bibtex's GCR pass was chosen on its dev only
  c.update_from_flattened_dict(mlc.NORMAL_CG)
  c.data.name = 'cal500'
  c.batch_size = 16
  # Chosen on dev (docs/sweeps/dense-mbce-cal500.md, MBCE, mean dev F1 @0.5 over 3 seeds: 37.06 at 80 epochs
  # against 35.95 at 40): the MBCE-vs-BR-logistic check of docs/sklearn_baseline.md.
  c.num_epochs = 80
  # MBCE and the baselines update their network once per batch, the implicit method T_inner times: their rows
  # train twice the epochs
  return mlc.apply(c, arg, once_per_batch_epochs=160)
