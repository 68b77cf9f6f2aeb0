"""Primary losses and multi-label metrics on cases worked by hand; every primary loss feeds the implicit term, on
multi-label and on tagging outputs."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from implicit_jax import losses, methods, tasks
from implicit_jax.engine import data
from implicit_jax.methods import implicit
from implicit_jax.tasks.mlc import metrics
from implicit_jax.tasks.mlc.evaluator import F1Evaluator
from tests.conftest import load_config

A = np.testing.assert_allclose


def test_ssvm_takes_the_most_violating_negative():
  e_neg, e_gold = jnp.array([[1.0], [3.0]]), jnp.array([2.0])
  A(losses.ssvm_margin(e_neg, e_gold, jnp.array([[0.5], [0.2]])), 1.5)   # [0.5-1+2]+ = 1.5, [0.2-3+2]+ = 0
  A(losses.ssvm_margin(jnp.array([5.0]), jnp.array([2.0]), jnp.array([1.0])), 0.0)  # margin met: no loss
  A(losses.perceptron(jnp.array([[1.0]]), e_gold), 1.0)                   # gold energy above the negative's


def test_contrastive_divergence_by_hand():
  e_gold, e_neg, cost = jnp.array([1.0]), jnp.array([[2.0]]), jnp.array([[0.5]])
  A(losses.contrastive_divergence(e_neg, e_gold, cost), 1 + np.log(np.exp(-1) + np.exp(0.5 - 2)), rtol=1e-6)
  # One negative: the SSVM margin with its hinge softened to a softplus.
  A(losses.contrastive_divergence(e_neg, e_gold, cost), np.log1p(np.exp(0.5 - 2 + 1)), rtol=1e-6)
  # Lowering the gold energy lowers the loss: the sign is that of a loss to minimise.
  assert losses.contrastive_divergence(e_neg, e_gold - 1, cost) < losses.contrastive_divergence(e_neg, e_gold, cost)


def test_nce_ranking_by_hand():
  # s_gold = -0 - (-2) = 2, s_neg = -1 - (-1) = 0: loss = logsumexp(2, 0) - 2.
  value = losses.nce_ranking(jnp.array([[1.0]]), jnp.array([0.0]), jnp.array([[-1.0]]), jnp.array([-2.0]))
  A(value, np.log1p(np.exp(-2.0)), rtol=1e-6)


def test_dvn_regression_by_hand():
  A(losses.dvn_regression(jnp.array([[0.0]]), jnp.array([[1.0]])), np.log(2), rtol=1e-6)
  # Energy -3 means predicted score sigmoid(3); against target 0.25 the loss is the cross-entropy.
  p = 1 / (1 + np.exp(-3.0))
  A(losses.dvn_regression(jnp.array([[-3.0]]), jnp.array([[0.25]])), -(0.25 * np.log(p) + 0.75 * np.log(1 - p)),
    rtol=1e-5)


def test_metrics_by_hand():
  gold = np.array([[1, 1, 0], [0, 0, 0], [0, 1, 0]])
  pred = np.array([[1, 0, 0], [0, 0, 0], [1, 1, 0]])
  # rows: 2*1/(1+2) = 2/3; empty gold and empty prediction = 1; 2*1/(2+1) = 2/3.
  A(metrics.example_f1(pred, gold), (2 / 3 + 1 + 2 / 3) / 3)
  A(metrics.micro_f1(pred, gold), 2 * 2 / (3 + 3))
  # labels: 0 -> 2*1/(2+1); 1 -> 2*1/(1+2); 2 -> absent from both = 1.
  A(metrics.macro_f1(pred, gold), (2 / 3 + 2 / 3 + 1) / 3)
  with pytest.raises(ValueError, match='does not match gold shape'):
    metrics.example_f1(pred[:, :2], gold)


def test_empty_set_f1_convention():
  """Row 2 has empty gold and empty prediction: 1 under SPEN's convention, 0 under scikit-learn's (checked against
  sklearn itself when installed); the evaluator selects and reports under its setting and records both."""
  gold = np.array([[1, 1, 0], [0, 0, 0], [0, 1, 0]])
  pred = np.array([[1, 0, 0], [0, 0, 0], [1, 1, 0]])
  A(metrics.example_f1(pred, gold, empty=0.0), (2 / 3 + 0 + 2 / 3) / 3)
  try:
    import sklearn.metrics  # pylint: disable=import-outside-toplevel
    with warnings.catch_warnings():
      warnings.simplefilter('ignore')  # sklearn warns about the ill-defined row it scores 0
      A(metrics.example_f1(pred, gold, empty=0.0), sklearn.metrics.f1_score(gold, pred, average='samples'))
  except ImportError:
    pass
  scores = metrics.all_f1(pred.astype(float), gold, 0.5, empty=0.0)
  assert scores['empty_rows'] == 1 and scores['example_f1'] == scores['example_f1_empty0']
  A(scores['example_f1_empty1'] - scores['example_f1_empty0'], 1 / 3)
  split = {'y': gold.astype(np.float32)}
  for empty in (0.0, 1.0):
    ev = F1Evaluator(empty)
    A(ev.metrics(pred.astype(np.float32), split)['f1'], metrics.example_f1(pred, gold, empty))
    assert ev.final(pred, split, pred, split)['empty_f1'] == empty
  with pytest.raises(ValueError, match=r'data\.empty_f1'):
    F1Evaluator(0.5)


def _problem(config_name, loss):
  config = load_config(config_name)
  config.method = 'implicit'
  config.implicit.primary_loss = loss
  config.implicit.negatives.num_samples = 3
  task = tasks.get_task(config)
  method = methods.build(task, config)
  batch = next(data.train_batches(task, 16, np.random.default_rng(0)))
  return config, task, method, method.init(jax.random.key(0)), batch


@pytest.mark.parametrize('config_name', ['tiny', 'tiny_tagging'])
@pytest.mark.parametrize('loss', losses.PRIMARY_LOSSES)
def test_every_primary_loss_reaches_theta(loss, config_name):
  """The implicit term multiplies d_theta L_prim: with hard, non-differentiable negatives it would vanish."""
  config, task, _, state, batch = _problem(config_name, loss)
  l_prim = implicit.make_losses(task, config).l_prim
  batch = implicit.step_batch(batch, jax.random.key(1), task.space, config.implicit.negatives)
  value, (g_theta, g_phi) = jax.jit(jax.value_and_grad(l_prim, argnums=(0, 1)))(
      state.params['theta'], state.params['phi'], batch)
  norm = lambda tree: float(sum(jnp.sum(jnp.square(v)) for v in jax.tree.leaves(tree))) ** 0.5
  assert np.isfinite(float(value))
  assert norm(g_theta) > 1e-6 and norm(g_phi) > 1e-6, (loss, norm(g_theta), norm(g_phi))


@pytest.mark.parametrize('config_name', ['tiny', 'tiny_tagging'])
def test_the_implicit_step_reports_both_terms(config_name):
  _, _, method, state, batch = _problem(config_name, 'cd')
  _, m = jax.jit(method.train_step)(state, batch, jax.random.key(1))
  assert np.isfinite(float(m['loss_prim']))
  assert float(m['implicit_norm']) > 1e-6 and float(m['explicit_norm']) > 1e-6


def test_energies_of_several_outputs_come_from_one_call_and_equal_a_call_each():
  from implicit_jax.tasks.mlc.models import MLCEnergy  # pylint: disable=import-outside-toplevel
  rng = np.random.default_rng(0)
  batch = {'x': jnp.asarray(rng.normal(size=(4, 7)), jnp.float32),
           'y': jnp.asarray(rng.integers(0, 2, size=(4, 5)), jnp.int32)}        # an integer gold, as datasets give
  energy = MLCEnergy(num_labels=5, feature_hidden=(6,), feature_dim=6)
  phi = energy.init(jax.random.key(0), batch, jnp.zeros((4, 5)))
  y_neg = jnp.asarray(rng.uniform(size=(3, 4, 5)), jnp.float32)
  calls = []

  def counted(p, b, y):
    calls.append(y.shape)
    return energy.apply(p, b, y)

  e_neg, e_gold = methods.energies(counted, phi, batch, y_neg, batch['y'])
  assert calls == [(4, 4, 5)]                                      # one pass over x for the gold and 3 negatives
  assert e_neg.shape == (3, 4) and e_gold.shape == (4,)
  A(e_neg, energy.apply(phi, batch, y_neg), rtol=1e-6)
  A(e_gold, energy.apply(phi, batch, batch['y']), rtol=1e-6)
  # Their gradients too (the losses differentiate them in phi and, through the negatives, in theta).
  loss = lambda p, yn: losses.contrastive_divergence(*methods.energies(energy.apply, p, batch, yn, batch['y']),
                                                     jnp.ones((3, 4)))
  apart = lambda p, yn: losses.contrastive_divergence(energy.apply(p, batch, yn), energy.apply(p, batch, batch['y']),
                                                      jnp.ones((3, 4)))
  for got, want in zip(jax.tree.leaves(jax.grad(loss, argnums=(0, 1))(phi, y_neg)),
                       jax.tree.leaves(jax.grad(apart, argnums=(0, 1))(phi, y_neg))):
    A(got, want, rtol=1e-5, atol=1e-7)
