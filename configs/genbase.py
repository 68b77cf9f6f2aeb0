r"""genbase (MULAN split; needs the data directory): implicit CD.

Run: python -m implicit_jax.main --config=configs/genbase.py --workdir=/tmp/implicit_jax/genbase \
       --config.data.data_dir=PATH/TO/data
Rows:   --config=configs/genbase.py:ROW trains a row of the results tables (docs/mlc_results.md, mlc_ablation.md,
        baselines.md name each row's ROW); --config.seed=K --config.data.split_seed=K its seed K (the seed also
        draws the dev split). ROW = SYSTEM[,resplit]: SYSTEM is a name of configs/bibtex.py's SYSTEMS or
        BASELINES, e.g. mbce, implicit-cd (this config as it is), implicit-ssvm,
        dvn, infnet+_stacked (a space written _);
        ",resplit": the paper's stratified 60/20/20 re-split of all rows.
"""

from implicit_jax.engine import rows


def get_config(arg=None):
  mlc = rows.load_module('bibtex.py', relative_to=__file__)  # bibtex's config and the multi-label rows
  c = mlc.get_config()
  # The multi-label rows' implicit design, not bibtex's (its one inner step, GCR pass and reused term were chosen on
  # bibtex dev only): bibtex.py's ROW_BASE (five inner Adam steps at 3e-4, the term solved on every step) with
  # NORMAL_CG (normal_cg, 5 iterations: 11 HVPs), the values every row of the tables starts from.
  c.update_from_flattened_dict({**mlc.ROW_BASE, **mlc.NORMAL_CG})
  c.data.name = 'genbase'
  c.chosen_on = 'genbase'
  c.num_epochs = 40
  if arg:  # a row of the multi-label tables (configs/bibtex.py's ROWS); MBCE and the baselines, which update
    # their network once per batch against the implicit method's T_inner, train twice the epochs
    mlc.row(c, 'genbase', arg, implicit_epochs=c.num_epochs, once_per_batch_epochs=80)
  return c
