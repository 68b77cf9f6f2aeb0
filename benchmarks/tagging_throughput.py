r"""Sequence-labeling speed: tokens and tweets per second of every tagging method in training and prediction, each
train step against the BiLSTM-CE step, and the implicit step against a cost model from unit costs.

Usage: python -m benchmarks.tagging_throughput [--data_dir /work/shared/data] [--reps 10]
           [--methods feedforward,crf,implicit,spen,infnet,infnet_plus,seal_dynamic] [--unrolled]
           [--write [--out docs/benchmarks.md]]

configs/pos.py (Twitter POS; one-layer BiLSTM of 100 units per direction, GloVe 50d; the energy with its own
BiLSTM), in one process, on one real batch: the first batch of the training loop's first epoch that falls in the
bucket of 32 tokens (32 tweets of similar lengths, ``data.train_batches`` with the config's seed), for training and
for prediction alike. Every step is ``train.make_train_step``'s (the jitted step the loop calls: donated state,
dropout and negatives drawn inside), called on its own output state as the loop does; prediction is
``train.make_predict``'s. Medians of ``--reps`` interleaved calls after a warm-up call (which compiles), each closed
by ``block_until_ready``; tokens are the batch's real (unpadded) ones. Ratios are against the BiLSTM trained with
cross-entropy (method ``feedforward``), which is always timed.

``--methods`` takes method names of ``implicit_jax.methods.REGISTRY`` (a name it lacks is skipped with a note) or
system names of configs/pos.py (experiments/reproduce_tagging.py's rows); each method is timed
with the POS overrides of its systems there (``ROWS``): implicit with its CD and SSVM primary losses, infnet_plus in
its three parameterisations and stacked with the global energies GE(a/b/c) (tag language models; NER systems in the
table, timed here on the POS batch), seal_dynamic with its margin and NCE energy losses.

Cost model of the implicit CD step (benchmarks/step_cost.py's, whose ``unit_functions`` and ``Stepper`` it reuses):
predicted = T_inner t_grad + n_hvp t_hvp + t_lin + t_mixed + t_prim, with ``grad`` one inner step (gradient of
L_aux in theta and the optimiser update), ``lin`` the linearisation every HVP reuses, ``hvp`` one HVP of L_aux in
theta (the linearised jvp of its gradient), ``mixed`` the cross term (mixed VJP d_phi d_theta L_aux), ``prim`` the
gradient of L_prim and n_hvp the HVPs the solver reports. Beside them, ``ce`` (one forward and backward of the
inference net's cross-entropy: the BiLSTM-CE step's gradient) and ``energy`` (one gradient of the energy in y at
A_theta(x): a GBI step's), which the L_aux gradient combines. ``--unrolled`` also times the implicit step with
its loops as straight-line code (``implicit.unroll=True``).

Prints the markdown section; ``--write`` puts it into ``--out`` (docs/benchmarks.md), replacing the previous one.
"""

import os
import textwrap

from benchmarks import common  # pylint: disable=wrong-import-position
from benchmarks import step_cost

import jax  # pylint: disable=wrong-import-position
import jax.numpy as jnp  # pylint: disable=wrong-import-position
import numpy as np  # pylint: disable=wrong-import-position

from implicit_jax import methods, tasks  # pylint: disable=wrong-import-position
from implicit_jax.engine import data, train  # pylint: disable=wrong-import-position
from implicit_jax.engine import xla_options  # pylint: disable=wrong-import-position
from implicit_jax.methods import implicit  # pylint: disable=wrong-import-position
import experiments  # pylint: disable=wrong-import-position

SYSTEMS = experiments.config_rows('pos').SYSTEMS  # the sequence-labeling rows, as configs/pos.py writes them

# method name -> the rows of configs/pos.py timed for it, in table order.
ROWS = {
    'feedforward': ('bilstm',),
    'crf': ('crf',),
    'implicit': ('implicit-cd', 'implicit-ssvm'),
    'spen': ('spen',),
    'infnet': ('infnet',),
    'infnet_plus': ('infnet-plus-separated', 'infnet-plus-shared', 'infnet-plus-stacked',
                    'infnet-plus-stacked-ge-a', 'infnet-plus-stacked-ge-b', 'infnet-plus-stacked-ge-c'),
    'seal_dynamic': ('seal-margin', 'seal-nce'),
}
REFERENCE = 'bilstm'      # the BiLSTM-CE step every ratio divides by
IMPLICIT = 'implicit-cd'  # the system of the cost model
BUCKET = 32               # the padded length of the timed batch (one of configs/pos.py's data.buckets)
INFNET_PLUS = 'InfNet+ (Tu, Pang & Gimpel 2020) reports 66-92 training examples/s on POS (GPU)'


def fill(text: str) -> str:
  return textwrap.fill(text, 115, break_long_words=False, break_on_hyphens=False)


def default_data_dir() -> str:
  shared = common.ROOT.parent / 'shared' / 'data'
  return os.environ.get('IMPLICIT_JAX_DATA_DIR') or (str(shared) if shared.is_dir() else '')


def choose_systems(names: list[str]) -> tuple[list[str], list[str]]:
  """``(systems, notes)``: the systems timed for ``names`` (method or system names; the reference first, no
  repeats) and a note for each method name that ``methods.REGISTRY`` lacks. Raises ValueError on other names."""
  systems, notes = [REFERENCE], []
  for name in names:
    if name in ROWS:
      if name not in methods.REGISTRY:
        notes.append(f'`{name}` skipped: not in implicit_jax.methods.REGISTRY in this checkout.')
        continue
      chosen = ROWS[name]
    elif name in SYSTEMS:
      chosen = (name,)
    else:
      raise ValueError(f'--methods: unknown {name!r}; choose from methods {list(ROWS)} or systems {list(SYSTEMS)}')
    systems += [s for s in chosen if s not in systems]
  return systems, notes


def bucket_batch(task, batch_size: int, seed: int, width: int = BUCKET) -> dict:
  """The first batch of width ``width`` that the training loop's first epoch yields (``y`` in gold coordinates)."""
  for batch in data.train_batches(task, batch_size, np.random.default_rng([seed, 0])):
    if batch['x'].shape[1] == width:
      return batch
  raise ValueError(f'no training batch of {batch_size} falls in the bucket of {width} tokens')


class TaggingProblem(common.Problem):
  """``common.Problem`` (L_aux, L_prim and the real jitted step in the open) on a given batch instead of the
  split's first rows."""

  def __init__(self, config, task, batch):
    super().__init__(config, task=task)
    self.raw_batch = batch
    step_key = jax.random.fold_in(self.step_rng, self.state.step)
    self.batch = implicit.step_batch(jax.device_put(batch), step_key, self.task.space, config.implicit.negatives)


def tagging_units(p: TaggingProblem) -> dict:
  """``ce`` and ``energy`` (see the module docstring), jitted, at the step's starting point and batch."""
  infnet, energy = implicit.make_losses(p.task, p.config)[2:]
  space, batch, theta, phi = p.task.space, p.batch, p.theta, p.phi

  @xla_options.jit
  def ce(theta, batch):
    loss = lambda t: space.local_loss(implicit.train_logits(infnet, t, batch), batch['y'], batch.get('mask'))
    return jax.value_and_grad(loss)(theta)

  @xla_options.jit
  def energy_grad(phi, batch, y):
    return jax.value_and_grad(lambda y: jnp.mean(energy.apply(phi, batch, y)))(y)

  y = jax.jit(lambda t, b: space.relax(implicit.train_logits(infnet, t, b)))(theta, batch)
  return {'ce': lambda: ce(theta, batch), 'energy': lambda: energy_grad(phi, batch, y)}


def build(base, name, task, replicated, sharded):
  """``(config, state, jitted step, jitted predict)`` of system ``name`` as train.py builds them."""
  config = base.copy_and_resolve_references()
  config.update_from_flattened_dict(SYSTEMS[name][1])
  method = methods.build(task, config)
  rng = jax.random.key(config.seed)
  state = method.init(jax.random.fold_in(rng, 0))
  step = train.make_train_step(method, jax.random.fold_in(rng, 1), replicated, sharded)
  return config, state, step, train.make_predict(method, replicated, sharded)


def main():
  p = common.parser(__doc__, reps=10)
  p.add_argument('--data_dir', default=default_data_dir(), help='folder holding twitter_pos/ (default: '
                 '$IMPLICIT_JAX_DATA_DIR, else ../shared/data when it exists)')
  p.add_argument('--methods', default=','.join(ROWS), help='comma-separated method names (REGISTRY) or systems '
                 'of experiments/reproduce_tagging.py; the BiLSTM-CE reference is always timed')
  p.add_argument('--unrolled', action='store_true', help='also time the implicit step with implicit.unroll=True')
  p.add_argument('--write', action='store_true', help='write the section into --out (otherwise print only)')
  args = p.parse_args()
  try:
    systems, notes = choose_systems([n for n in args.methods.split(',') if n])
  except ValueError as e:
    p.error(str(e))
  for note in notes:
    print(note, flush=True)

  m = common.machine()
  print(common.machine_line(m), flush=True)
  base = common.load_config('pos')
  base.data.data_dir = args.data_dir
  task = tasks.get_task(base)
  batch = bucket_batch(task, base.batch_size, base.seed)
  inputs = task.inputs(batch)
  n_examples, tokens = len(batch['x']), int(batch['mask'].sum())
  _, replicated, sharded = train.data_parallel(base)
  train_batch, predict_batch = data.shard_batch(batch, sharded), data.shard_batch(inputs, sharded)

  steps, predicts, configs, problem = {}, {}, {}, None
  for name in systems:
    if name == IMPLICIT:  # its step is the Problem's, checked against the rebuilt losses the units time
      config = base.copy_and_resolve_references()
      config.update_from_flattened_dict(SYSTEMS[name][1])
      problem = TaggingProblem(config, task, batch)
      print(f'rebuilt L_aux/L_prim vs the real step: max rel diff {problem.check_against_step():.2e}', flush=True)
      step, state = problem.jitted_step()[0], problem.state
      predict = train.make_predict(problem.method, replicated, sharded)
    else:
      config, state, step, predict = build(base, name, task, replicated, sharded)
    configs[name] = config
    steps[name] = step_cost.Stepper(step, state, train_batch, replicated)
    predicts[name] = lambda predict=predict, params=state.params: predict(params, predict_batch)

  contenders = dict(steps)
  if problem is not None:
    units, _ = step_cost.unit_functions(problem)
    units.update(tagging_units(problem))
    contenders.update({f'unit_{k}': f for k, f in units.items()})
    if args.unrolled:
      unrolled_config = problem.config.copy_and_resolve_references()
      unrolled_config.implicit.unroll = True
      unrolled = TaggingProblem(unrolled_config, task, batch)
      u_step, u_batch, u_replicated = unrolled.jitted_step()
      contenders['step_unrolled'] = step_cost.Stepper(u_step, unrolled.state, u_batch, u_replicated)
  print(f'timing {len(contenders)} train contenders, {args.reps} reps (the warm-up round compiles)', flush=True)
  times = common.time_interleaved(contenders, args.reps)
  predict_times = common.time_interleaved(predicts, args.reps)
  med = {k: common.median(v) for k, v in times.items()}
  pmed = {k: common.median(v) for k, v in predict_times.items()}

  rows = []
  for name in systems:
    t, q = med[name], pmed[name]
    rows.append([SYSTEMS[name][0], f'`{configs[name].method}`', common.ms(t), common.spread(times[name]),
                 f'{tokens / t:,.0f}', f'{n_examples / t:,.1f}', f'{t / med[REFERENCE]:.1f}x', common.ms(q),
                 f'{tokens / q:,.0f}', f'{n_examples / q:,.0f}', f'{q / pmed[REFERENCE]:.1f}x'])
  table = common.table(['system', 'method', 'train ms/step', 'p25-p75 ms', 'train tokens/s', 'train tweets/s',
                        'step vs BiLSTM-CE', 'predict ms', 'predict tokens/s', 'predict tweets/s',
                        'predict vs BiLSTM-CE'], rows)
  infnets = [n_examples / med[s] for s in systems if configs[s].method in ('infnet', 'infnet_plus')]
  span = (f'{min(infnets):,.1f}' + (f'-{max(infnets):,.1f}' if len(infnets) > 1 else '')) if infnets else ''
  ours = (f'; ours on this machine: {span} training tweets/s for the inference-network methods (rows above)'
          if infnets else '')
  note_lines = ''.join(f'\n\n{note}' for note in notes)

  model_text = ''
  if problem is not None:
    cfg = problem.config.implicit
    iters = steps[IMPLICIT].mean_iterations()[0]
    parts = {'inner': cfg.inner_steps * med['unit_grad'], 'hvp': iters * med['unit_hvp'],
             'rest': med['unit_lin'] + med['unit_mixed'] + med['unit_prim']}
    predicted, measured = sum(parts.values()), med[IMPLICIT]
    model = common.table(
        ['T_inner', 'n_hvp', 'T_inner t_grad ms', 'n_hvp t_hvp ms', 't_lin + t_mixed + t_prim ms', 'predicted ms',
         'measured ms', 'efficiency', 'BiLSTM-CE step ms', 'implicit / BiLSTM-CE'],
        [[cfg.inner_steps, f'{iters:.3g}', common.ms(parts['inner']), common.ms(parts['hvp']),
          common.ms(parts['rest']), common.ms(predicted), common.ms(measured), f'{predicted / measured:.2f}',
          common.ms(med[REFERENCE]), f'{measured / med[REFERENCE]:.1f}x']])
    unit_names = [k for k in units if k != 'dispatch'] + ['dispatch']
    units_table = common.table(
        ['unit', 'median ms', 'p25-p75 ms', 'vs ce'],
        [[k, common.ms(med[f'unit_{k}']), common.spread(times[f'unit_{k}']),
          f'{med[f"unit_{k}"] / med["unit_ce"]:.2f}'] for k in unit_names])
    split = (f"One inner step (`grad`, {common.ms(med['unit_grad'])} ms) against `ce` + `energy` "
             f"({common.ms(med['unit_ce'] + med['unit_energy'])} ms): the gradient of L_aux is the cross-entropy's "
             "plus the energy's, pulled back through the inference net.")
    if 'step_unrolled' in med:
      split += (f" Loops unrolled (`implicit.unroll=True`): the implicit step takes "
                f"{common.ms(med['step_unrolled'])} ms against {common.ms(measured)} ms with XLA loops "
                f"({measured / med['step_unrolled']:.2f}x).")
    intro = ("**The implicit CD step against a cost model** (benchmarks/step_cost.py's units on this batch; solver "
             f'{cfg.solver.name}, at most {cfg.solver.iterations} iterations, n_hvp the mean HVP count it reported '
             'over the timed steps; predicted = T_inner t_grad + n_hvp t_hvp + t_lin + t_mixed + t_prim, '
             'efficiency = predicted / measured):')
    legend = ('Units, each jitted alone on the same batch and parameters (`grad` one inner step on L_aux, `lin` the '
              'linearisation the HVPs reuse, `hvp` one HVP of L_aux in theta, `mixed` the cross term d_phi d_theta '
              "L_aux, `prim` the gradient of L_prim; `ce` one forward and backward of the inference net's "
              'cross-entropy, `energy` one gradient of E_phi in y at A_theta(x), `dispatch` a jitted no-op, the '
              'call overhead in every unit):')
    model_text = f'\n\n{fill(intro)}\n\n{model}\n\n{fill(legend)}\n\n{units_table}\n\n{fill(split)}'

  setup = (f'configs/pos.py (Twitter POS, encoder {base.model.encoder}, {base.model.hidden} units per direction, '
           f'GloVe {base.model.embedding_dim}d; energy with its own BiLSTM): one training batch of {n_examples} '
           f'tweets in the bucket of {batch["x"].shape[1]} tokens ({tokens} real tokens), for training and '
           'prediction alike; the loop\'s jitted step (`train.make_train_step`, called on its own output state) and '
           f'predictor (`train.make_predict`), medians of {args.reps} interleaved calls after a warm-up call, '
           'compilation excluded. Ratios are against the BiLSTM trained with cross-entropy. Each jitted step '
           'compiles once per bucket and never again (tests/test_tagging_compile.py).')
  body = f"""## Sequence labeling: tokens per second (`benchmarks/tagging_throughput.py`)

{common.section_header(m)}
{fill(setup)}

{table}

{fill(INFNET_PLUS + ours + '.')}{note_lines}{model_text}
"""
  print(body, flush=True)
  common.write_section(args.out if args.write else '-', 'tagging_throughput', body)


if __name__ == '__main__':
  main()
