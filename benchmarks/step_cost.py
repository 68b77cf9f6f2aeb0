r"""Cost of one implicit outer step against one MBCE step, and a cost model of the implicit step from unit costs.

Usage: python -m benchmarks.step_cost [--reps 20] [--out docs/benchmarks.md | -]

On the bibtex config (batch 32, T_inner = 5, 5 negatives, CD loss), in one process, on one batch:

* the real ``method.train_step`` jitted as ``train.make_train_step`` does, against the feed-forward (MBCE) step;
* unit costs, each jitted alone on the same batch and parameters: ``t_grad`` (value_and_grad of L_aux in theta
  plus the optimiser update: one inner step), ``t_lin`` (``jax.linearize`` of the theta-gradient: the residuals
  every HVP reuses), ``t_hvp`` (one application of the linearised gradient: one HVP as the solver takes it),
  ``t_mixed`` (``bilevel.mixed_vjp``) and ``t_prim`` (value_and_grad of L_prim in (theta, phi));
* predicted = T_inner t_grad + n_hvp t_hvp + t_lin + t_mixed + t_prim, with n_hvp the HVPs the solver reports
  (its ``iterations`` diagnostic) plus the residual check; efficiency = predicted / measured step time. Above
  1 the compiled step is cheaper than its parts called one by one; well below 1 it wastes time somewhere.

Done for the committed solver (``normal_cg``, 5 iterations), ``minres`` and ``cg`` (5 iterations each).
"""

import dataclasses

from benchmarks import common  # pylint: disable=wrong-import-position

import jax  # pylint: disable=wrong-import-position
import optax  # pylint: disable=wrong-import-position

from implicit_jax import bilevel  # pylint: disable=wrong-import-position
from implicit_jax.solvers import reuse as reuse_lib  # pylint: disable=wrong-import-position
from implicit_jax.engine import xla_options  # pylint: disable=wrong-import-position


class Stepper:
  """Calls a donating jitted step on its own output state, as the training loop does. The state moves on
  from call to call, and with it the number of CG iterations (``cg`` stops early): every call's metrics are
  kept (on device, read after timing) so that the cost model counts the HVPs the timed steps made."""

  def __init__(self, step, state, batch, replicated, period: int = 1):
    self.step, self.batch, self.period = step, batch, period
    self.state = jax.device_put(jax.tree.map(lambda a: a.copy(), state), replicated)
    self.metrics, self.calls = [], 0  # the calls' metrics, and how many were made (the step's place in a period)

  def __call__(self):
    self.calls += 1
    self.state, metrics = self.step(self.state, self.batch)
    self.metrics.append(metrics)
    return self.state

  def seconds(self, times: list) -> float:
    """The step time from the timed calls (the last ``len(times)``): their median, or for a term solved on every
    ``period``-th step, whose steps alternate (in one program or two), the mean over the period of the median of
    the calls at each place in it."""
    if self.period == 1:
      return common.median(times)
    places = [k % self.period for k in range(self.calls - len(times), self.calls)]
    return sum(common.median([t for t, p in zip(times, places) if p == place])
               for place in range(self.period)) / self.period

  def flops(self) -> float:
    """XLA's count of floating-point operations of one step (the mean over a period's forms). XLA counts a loop's
    body once, not once per trip, and both branches of a conditional: for a step with loops inside (T_inner above 1,
    an iterative solver) the count is low, for one that picks its form inside one program (``solver.reuse``
    'r<k>') high."""
    forms = ([(self.step.jitted, (self.state, self.batch, self.step.form(k))) for k in range(self.period)]
             if hasattr(self.step, 'jitted') else [(self.step, (self.state, self.batch))])
    counts = []
    for fn, args in forms:
      cost = fn.lower(*args).compile().cost_analysis()
      cost = cost[0] if isinstance(cost, (list, tuple)) else cost
      counts.append(float(cost.get('flops', float('nan'))))
    return sum(counts) / len(counts)

  def mean_iterations(self) -> tuple[float, int, int]:
    """Mean, min and max of the solver's ``iterations`` diagnostic over the calls made so far."""
    its = [float(m['iterations']) for m in self.metrics]
    return sum(its) / len(its), int(min(its)), int(max(its))


def training_steppers(configs: dict, first_batch) -> dict:
  """label -> ``Stepper`` of each config's training step, built as the training loop builds it
  (``train.make_train_step``: donated state, dropout and negatives drawn inside) on one data mesh. Configs with the
  same data section share one task and its batch ``first_batch(task, config)``; the others get their own."""
  import json  # pylint: disable=import-outside-toplevel
  from implicit_jax import methods, tasks  # pylint: disable=import-outside-toplevel
  from implicit_jax.engine import data as data_lib, train  # pylint: disable=import-outside-toplevel
  _, replicated, sharded = train.data_parallel(next(iter(configs.values())))
  data, steppers = {}, {}
  for label, config in configs.items():
    key = json.dumps(config.data.to_dict(), sort_keys=True, default=str)
    if key not in data:
      task = tasks.get_task(config)
      data[key] = task, data_lib.shard_batch(first_batch(task, config), sharded)
    task, batch = data[key]
    method = methods.build(task, config)
    rng = jax.random.key(config.seed)
    step = train.make_train_step(method, jax.random.fold_in(rng, 1), replicated, sharded)
    period = reuse_of(config).period
    steppers[label] = Stepper(step, method.init(jax.random.fold_in(rng, 0)), batch, replicated, period)
  return steppers


def warmup_calls(steppers: dict) -> int:
  """Calls that compile every form of every stepper (one for a step of one form): the warm-up rounds."""
  return max(s.period for s in steppers.values())


def seconds_per_step(times: dict, steppers: dict) -> dict:
  """The step time of each label from its timed calls (``Stepper.seconds``): the median, or for an implicit term
  solved every k-th step and reused between (``solver.reuse``), whose solving and reusing steps alternate, the mean
  of their medians over k steps."""
  return {label: steppers[label].seconds(ts) for label, ts in times.items()}


def reuse_of(config) -> reuse_lib.Reuse:
  """The reuse policy of the implicit term a config runs (another method's: none)."""
  return reuse_lib.Reuse.parse(config.implicit.solver.reuse) if config.method == 'implicit' else reuse_lib.Reuse()


def design_of(config) -> str:
  """The implicit design a config runs, as the benchmark tables name it ('' for another method)."""
  if config.method != 'implicit':
    return ''
  s, reuse = config.implicit.solver, reuse_of(config)
  return (f'T_inner {config.implicit.inner_steps}, {s.name}' + (f' {s.iterations}' if s.name != 'none' else '')
          + (f', term every {reuse.period} steps' if reuse.reused else '')
          + (', two programs' if reuse.by_host else ''))


def unit_functions(p: common.Problem):
  """The jitted unit costs: name -> zero-argument callable. The second-order units run at theta_T, where the
  step's backward pass runs them; the inner step at the warm start, where the step's inner loop begins."""
  theta, phi, batch, opt = p.theta, p.phi, p.batch, p.inner_opt
  num_steps = p.config.implicit.inner_steps
  theta_t = xla_options.jit(lambda th, s, ph, b: bilevel.inner_loop(p.l_aux, opt, num_steps, ph, th, s, b)[0])(
      theta, p.theta_state, phi, batch)

  @xla_options.jit
  def inner_step(theta, state, phi, batch):
    loss, grad = jax.value_and_grad(p.l_aux)(theta, phi, batch)
    updates, state = opt.update(grad, state, theta)
    return optax.apply_updates(theta, updates), state, loss

  grad_fn = lambda t, phi, batch: jax.grad(p.l_aux)(t, phi, batch)
  v = jax.grad(p.l_prim)(theta_t, phi, batch)  # the right-hand side the solver gets: d_theta L_prim

  @xla_options.jit
  def linearize(theta, phi, batch):
    # The residuals of the linearisation, which is what the solver's jax.linearize leaves live for its HVPs.
    _, f_jvp = jax.linearize(lambda t: grad_fn(t, phi, batch), theta)
    return jax.closure_convert(f_jvp, v)[1]

  _, f_jvp = jax.linearize(lambda t: grad_fn(t, phi, batch), theta_t)
  apply_converted, consts = jax.closure_convert(f_jvp, v)
  apply = xla_options.jit(apply_converted)
  mixed = xla_options.jit(lambda theta, phi, batch, u: bilevel.mixed_vjp(p.l_aux, theta, phi, batch, u))
  prim = xla_options.jit(jax.value_and_grad(p.l_prim, argnums=(0, 1)))
  # What a jitted call costs with no work: dispatch and the host round trip every unit time above includes.
  noop = xla_options.jit(lambda s: s + 1)
  scalar = jax.numpy.zeros(())
  units = {
      'grad': lambda: inner_step(theta, p.theta_state, phi, batch),
      'lin': lambda: linearize(theta_t, phi, batch),
      'hvp': lambda: apply(v, *consts),
      'mixed': lambda: mixed(theta_t, phi, batch, v),
      'prim': lambda: prim(theta_t, phi, batch),
      'dispatch': lambda: noop(scalar),
  }
  # Sub-pieces of the step, each one jitted call: the whole inner loop, and the solve (linearize + HVPs +
  # residual check) of each solver. Against the units they show what compiling the pieces together saves.
  loop = xla_options.jit(lambda th, s, ph, b: bilevel.inner_loop(p.l_aux, opt, num_steps, ph, th, s, b))
  pieces = {'inner_loop': lambda: loop(theta, p.theta_state, phi, batch)}
  for name in SOLVERS:
    solver = dataclasses.replace(p.solver, name=name, iterations=5)
    solve = xla_options.jit(
        lambda th, ph, b, v, solver=solver: bilevel.solve_inverse_hvp(p.l_aux, th, ph, b, v, solver))
    pieces[f'solve_{name}'] = lambda solve=solve: solve(theta_t, phi, batch, v)
  return units, pieces


SOLVERS = ('normal_cg', 'minres', 'cg')


def solver_config(name):
  config = common.load_config('bibtex:base')
  config.implicit.solver.name = name
  config.implicit.solver.iterations = 5
  return config


def run(reps):
  m = common.machine()
  print(common.machine_line(m), flush=True)
  problems = {name: common.Problem(solver_config(name)) for name in SOLVERS}
  base = problems['normal_cg']
  for name, p in problems.items():
    print(f'rebuilt L_aux/L_prim vs the real step ({name}): max rel diff {p.check_against_step():.2e}', flush=True)
  mbce_config = solver_config('normal_cg')
  mbce_config.method = 'feedforward'
  mbce = common.Problem(mbce_config, task=base.task)

  contenders = {}
  for name, p in problems.items():
    step, batch, replicated = p.jitted_step()
    contenders[f'step_{name}'] = Stepper(step, p.state, batch, replicated)
  step, batch, replicated = mbce.jitted_step()
  contenders['step_mbce'] = Stepper(step, mbce.state, batch, replicated)
  units, pieces = unit_functions(base)  # the unit costs do not depend on the solver
  contenders.update({f'unit_{k}': f for k, f in units.items()})
  contenders.update({f'piece_{k}': f for k, f in pieces.items()})
  times = common.time_interleaved(contenders, reps)
  med = {k: common.median(v) for k, v in times.items()}
  solve_iters = {k: int(round(float(pieces[k]()[1]['iterations']))) for k in pieces if k.startswith('solve_')}

  t_inner = base.config.implicit.inner_steps
  lines = []
  rows_model = []
  for name, p in problems.items():
    iters, lo, hi = contenders[f'step_{name}'].mean_iterations()
    extra = 1 if p.solver.track_residual and p.solver.name not in ('cg', 'normal_cg', 'minres', 'dense') else 0
    n_hvp = iters + extra
    parts = {'inner': t_inner * med['unit_grad'], 'hvp': n_hvp * med['unit_hvp'],
             'rest': med['unit_lin'] + med['unit_mixed'] + med['unit_prim']}
    predicted = sum(parts.values())
    calls = t_inner + n_hvp + 3
    predicted_nd = predicted - calls * med['unit_dispatch']
    measured = med[f'step_{name}']
    counts = f'{iters:.3g} + {extra}' + (f' (solver {lo}-{hi})' if lo != hi else '')
    rows_model.append([name, t_inner, counts, ms(parts['inner']), ms(parts['hvp']), ms(parts['rest']),
                       ms(predicted), ms(measured), f'{predicted / measured:.2f}', f'{predicted_nd / measured:.2f}',
                       f'{measured / med["step_mbce"]:.1f}'])
    lines.append(f'{name}: step {ms(measured)} ms, predicted {ms(predicted)} ms, efficiency '
                 f'{predicted / measured:.2f} ({predicted_nd / measured:.2f} without dispatch), '
                 f'step / MBCE step {measured / med["step_mbce"]:.1f}')

  steps = common.table(['step', 'median ms', 'p25-p75 ms'],
                       [[k[5:], ms(med[k]), common.spread(times[k])] for k in contenders if k.startswith('step_')])
  units_table = common.table(['unit', 'median ms', 'p25-p75 ms'],
                             [[k, ms(med[f'unit_{k}']), common.spread(times[f'unit_{k}'])] for k in units])
  piece_rows = [['inner_loop', ms(med['piece_inner_loop']), common.spread(times['piece_inner_loop']),
                 ms(t_inner * med['unit_grad']), f'T_inner = {t_inner} inner steps']]
  for k, n in solve_iters.items():
    extra = 0  # every solver here tracks its residual without an extra HVP
    piece_rows.append([k, ms(med[f'piece_{k}']), common.spread(times[f'piece_{k}']),
                       ms(med['unit_lin'] + (n + extra) * med['unit_hvp']),
                       f'linearize + {n} + {extra} HVPs at theta_T'])
  pieces_table = common.table(['sub-piece (one jitted call)', 'median ms', 'p25-p75 ms', 'sum of its units ms',
                               'units'], piece_rows)
  model = common.table(['solver', 'T_inner', 'n_hvp (solver + residual)', 'T_inner t_grad ms', 'n_hvp t_hvp ms',
                        't_lin + t_mixed + t_prim ms', 'predicted ms', 'measured ms', 'efficiency',
                        'efficiency, dispatch removed', 'step / MBCE'], rows_model)
  print(steps, units_table, pieces_table, model, *lines, sep='\n\n', flush=True)
  return m, steps, units_table, pieces_table, model


def ms(seconds):
  return common.ms(seconds)


def main():
  args = common.parser(__doc__.split('\n')[0]).parse_args()
  m, steps, units_table, pieces_table, model = run(args.reps)
  body = f"""## Step cost and cost model (`benchmarks/step_cost.py`)

{common.section_header(m)}
bibtex config, batch 32, T_inner = 5, 5 negatives, CD loss; medians of {args.reps} interleaved repetitions.
`dispatch` is a jitted no-op: the per-call overhead included in every unit time (but paid once by the step).

Whole steps:

{steps}

Unit costs (same batch, same parameters, each jitted alone):

{units_table}

Sub-pieces, each jitted as one call, against the sum of their units:

{pieces_table}

Cost model (predicted = T_inner t_grad + n_hvp t_hvp + t_lin + t_mixed + t_prim; efficiency = predicted /
measured; n_hvp: the solver's mean `iterations` diagnostic over the timed steps, whose state moves on from
step to step as in training, plus the residual check):

{model}
"""
  common.write_section(args.out, 'step_cost', body)


if __name__ == '__main__':
  main()
