r"""Implicit against unrolled differentiation through the inner loop: time and memory per outer gradient.

Usage: python -m benchmarks.unrolled [--reps 20] [--steps 1,5,20,50] [--out docs/benchmarks.md | -]

On the bibtex config (batch 32, 5 negatives, CD loss, normal_cg with 5 iterations), for each T_inner:

* unrolled: ``jax.grad`` w.r.t. phi of ``L_prim(inner_loop(...))``: plain reverse-mode autodiff through the
  ``lax.scan`` of ``bilevel.inner_loop``, which keeps every inner step's activations for the backward pass;
* implicit: ``jax.grad`` through ``bilevel.ImplicitSolve``: the inner loop runs forward only and the backward
  pass is the inverse-HVP solve at theta_T, whatever T_inner was.

Memory is XLA's compile-time figure, ``jax.jit(f).lower(*args).compile().memory_analysis()``: the temporary
buffers of the compiled program plus its arguments and outputs. It is deterministic and load-independent (the
CPU backend has no runtime peak-memory counter), so it compares programs, not processes.
"""

import functools

from benchmarks import common  # pylint: disable=wrong-import-position

import jax  # pylint: disable=wrong-import-position
import numpy as np  # pylint: disable=wrong-import-position
import optax  # pylint: disable=wrong-import-position

import experiments  # pylint: disable=wrong-import-position
from implicit_jax import bilevel  # pylint: disable=wrong-import-position
from implicit_jax.engine import xla_options  # pylint: disable=wrong-import-position

# Adam through an unrolled loop needs eps_root (methods.EPS_ROOT says why); both sides use it here.
from implicit_jax.methods import EPS_ROOT  # pylint: disable=wrong-import-position


def unrolled_fn(p: common.Problem, num_steps: int):
  def grad(phi, theta0, state0, batch):
    outer = lambda phi: p.l_prim(bilevel.inner_loop(p.l_aux, p.inner_opt, num_steps, phi, theta0, state0,
                                                    batch)[0], phi, batch)
    return jax.grad(outer)(phi)

  return grad


def implicit_fn(p: common.Problem, num_steps: int):
  solve = p.implicit_solve(num_steps=num_steps)

  def grad(phi, theta0, state0, batch):
    return jax.grad(lambda phi: p.l_prim(solve(phi, theta0, state0, batch)[0], phi, batch))(phi)

  return grad


def memory(fn, args) -> dict:
  stats = xla_options.jit(fn).lower(*args).compile().memory_analysis()
  fields = {k: getattr(stats, k) for k in dir(stats) if k.endswith('_in_bytes')}
  fields['total'] = stats.temp_size_in_bytes + stats.argument_size_in_bytes + stats.output_size_in_bytes
  return fields


def cosine(a, b) -> float:
  fa, fb = (np.concatenate([np.ravel(np.asarray(x, np.float64)) for x in jax.tree.leaves(t)]) for t in (a, b))
  return float(fa @ fb / (np.linalg.norm(fa) * np.linalg.norm(fb)))


def mib(n: int) -> str:
  return f'{n / 2 ** 20:.2f}'


def run(reps, steps):
  m = common.machine()
  print(common.machine_line(m), flush=True)
  p = common.Problem(common.load_config('bibtex:base'))
  p.inner_opt = optax.adam(p.config.implicit.inner_optimizer.learning_rate, eps_root=EPS_ROOT)
  args = (p.phi, p.theta, p.theta_state, p.batch)
  rows, fields_seen, peaks = [], None, set()
  for t in steps:
    fns = {'unrolled': unrolled_fn(p, t), 'implicit': implicit_fn(p, t)}
    mem = {k: memory(f, args) for k, f in fns.items()}
    peaks |= {(mem[k].get('peak_memory_in_bytes'), mem[k]['argument_size_in_bytes'] + mem[k]['output_size_in_bytes'])
              for k in fns}
    if fields_seen is None:
      fields_seen = sorted(mem['implicit'])
      print('memory_analysis() fields:', ', '.join(f for f in fields_seen if f != 'total'), flush=True)
    jitted = {k: xla_options.jit(f) for k, f in fns.items()}
    grads = {k: jax.block_until_ready(f(*args)) for k, f in jitted.items()}
    times = common.time_interleaved({k: functools.partial(f, *args) for k, f in jitted.items()}, reps)
    med = {k: common.median(v) for k, v in times.items()}
    row = [t, common.ms(med['unrolled']), common.ms(med['implicit']), f'{med["unrolled"] / med["implicit"]:.2f}',
           mib(mem['unrolled']['temp_size_in_bytes']), mib(mem['implicit']['temp_size_in_bytes']),
           mib(mem['unrolled']['total']), mib(mem['implicit']['total']),
           f'{cosine(grads["unrolled"], grads["implicit"]):.3f}']
    rows.append(row)
    print(f'T_inner {t}: ' + ', '.join(f'{k} {common.ms(med[k])} ms, temp {mib(mem[k]["temp_size_in_bytes"])} MiB, '
                                       f'total {mib(mem[k]["total"])} MiB' for k in fns), flush=True)
  result = common.table(['T_inner', 'unrolled ms', 'implicit ms', 'unrolled / implicit time',
                         'unrolled temp MiB', 'implicit temp MiB', 'unrolled total MiB', 'implicit total MiB',
                         'cosine(unrolled, implicit)'], rows)
  print(result, flush=True)
  if all(peak is not None and abs(peak - io) < 2 ** 10 for peak, io in peaks):
    peak_note = ('`peak_memory_in_bytes` is left out: on this backend it equals arguments + outputs (to < 1 KiB) for '
                 f'every program ({", ".join(sorted({mib(io) for _, io in peaks}))} MiB), temporaries uncounted.')
  else:
    peak_note = 'peak_memory_in_bytes / (arguments + outputs), MiB: ' + ', '.join(
        f'{mib(p or 0)} / {mib(io)}' for p, io in sorted(peaks, key=str))
  print(peak_note, flush=True)
  return m, result, [f for f in fields_seen if f != 'total'], peak_note


def main():
  p = common.parser(__doc__.split('\n')[0])
  p.add_argument('--steps', default='1,5,20,50', type=experiments.integers,
                 help='comma-separated T_inner values (default 1,5,20,50)')
  args = p.parse_args()
  steps = args.steps
  m, result, fields, peak_note = run(args.reps, steps)
  body = f"""## Implicit vs unrolled differentiation (`benchmarks/unrolled.py`)

{common.section_header(m)}
bibtex config (batch 32, 5 negatives, CD, normal_cg with 5 iterations), outer gradient dL_prim/dphi from the
same warm start; time: medians of {args.reps} interleaved repetitions. Memory: XLA's compile-time
`memory_analysis()` of each jitted gradient (fields reported by this JAX: {', '.join(f'`{f}`' for f in fields)});
*temp* = `temp_size_in_bytes` (the buffers live during the computation: what unrolling grows), *total* = temp +
arguments + outputs. {peak_note} Both are
compile-time figures of the program: deterministic and load-independent, not a measured process peak (the CPU
backend has no runtime peak-memory counter). The cosine compares the two gradients: implicit differentiation
treats theta_T as a stationary point, which a few warm-started steps only approach. The inner Adam has
`eps_root = {EPS_ROOT:g}` on both sides: with the committed `eps_root = 0` the unrolled gradient is NaN (infinite
derivative of sqrt(v) at v = 0 for parameters whose gradient has always been zero, e.g. first-layer rows of
features absent from the batch), which costs the same time but makes the cosine meaningless.

{result}
"""
  common.write_section(args.out, 'unrolled', body)


if __name__ == '__main__':
  main()
