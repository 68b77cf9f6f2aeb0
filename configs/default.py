r"""Base config: the package's defaults (implicit_jax/engine/config.py assembles them; every field is documented
where it is defined: core fields in engine/config.py, data and model in the task's module, each method's
section in its module).

On its own it trains the implicit method on the built-in synthetic multi-label problem
(implicit_jax/tasks/mlc/synthetic.py, a known answer: test example F1 can reach 1), a seconds-long smoke run that
needs no data:
Run:    python -m implicit_jax.main --config=configs/default.py --workdir=/tmp/implicit_jax/default
"""

from implicit_jax.engine import config as config_lib


def get_config():
  return config_lib.base_config(task='synthetic', method='implicit')
