"""experiments/tagging_hessian.py: the autodiff cross-Hessian between neighbouring tags against an analytic one, the
bigram table by hand, and the command on a trained tiny tagging run (where Eq. 7 makes it equal W)."""

import jax.numpy as jnp
import numpy as np
import pytest

from implicit_jax.engine import train
from tests.conftest import float64, load_config
from experiments import tagging_hessian


def test_cross_hessian_matches_the_analytic_mixed_derivative():
  rng = np.random.default_rng(0)
  b_, t_, c_ = 2, 5, 3
  m, a, b = rng.normal(size=(c_, c_)), rng.normal(size=c_), rng.normal(size=c_)
  y = rng.random((b_, t_, c_))
  mask = np.ones((b_, t_))
  mask[1, 3:] = 0.0                                             # the second sentence has 3 tokens

  def energy(v):  # bilinear + a non-bilinear coupling of neighbours + a term within a position (no cross term)
    first, second = v[:, :-1], v[:, 1:]
    return (jnp.einsum('bti,ij,btj->b', first, m, second) + jnp.sum((first @ a) * (second @ b) ** 2, axis=1)
            + jnp.sum(jnp.sin(v @ a), axis=1))

  with float64():
    total, pairs = tagging_hessian.cross_hessian(energy, jnp.asarray(y), jnp.asarray(mask))
  # d^2 / dy_{t,i} dy_{t+1,j} of (y_t.a)(y_{t+1}.b)^2 = 2 a_i (y_{t+1}.b) b_j; of the bilinear term, M_ij.
  expected = sum(m + 2.0 * np.outer(a, b) * (y[k, t + 1] @ b)
                 for k in range(b_) for t in range(t_ - 1) if mask[k, t + 1])
  assert int(pairs) == 4 + 2
  np.testing.assert_allclose(total, expected, rtol=1e-10)


def test_bigram_log_probs_by_hand():
  tags = np.array([[0, 1, 1, -1], [1, 0, -1, -1]])  # pairs (0,1), (1,1), (1,0)
  out = tagging_hessian.bigram_log_probs(tags, 2)
  np.testing.assert_allclose(np.exp(out), [[1 / 3, 2 / 3], [2 / 4, 2 / 4]])


@pytest.mark.e2e
def test_command_on_a_trained_run_recovers_w(tmp_path):
  config = load_config('tiny_tagging')
  config.method = 'implicit'
  config.num_epochs = 1
  workdir = str(tmp_path / 'run')
  train.train_and_evaluate(config, workdir)
  result = tagging_hessian.main(['--workdir', workdir, '--out_dir', str(tmp_path / 'out'), '--max_sentences', '40'])
  assert result['max_abs_diff_to_W'] < 1e-5
  assert result['pairs'] > 40 and -1.0 <= result['pearson'] <= 1.0
  md = (tmp_path / 'out' / 'cross_hessian_synthetic.md').read_text()
  assert f'{result["pearson"]:+.3f}' in md and (tmp_path / 'out' / 'cross_hessian_synthetic.png').stat().st_size > 0
