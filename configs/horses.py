r"""Weizmann horses at 32x32 (implicit_jax/tasks/segmentation): the implicit method with the contrastive-divergence
loss and the 1 - soft IoU cost, an FCN inference net and a convolutional energy over (image, mask).

Run:    python -m implicit_jax.main --config=configs/horses.py --config.data.data_dir=../shared/data \
            --workdir=/tmp/implicit_jax/horses
Others: --config.method=feedforward (FCN trained with CE), dvn (GBI on the energy, regressing soft IoU),
        seal_dynamic with --config.seal.energy_loss=regression|nce, --config.implicit.primary_loss=dvn.
Crops:  --config.data.crop=24: SEAL's protocol, random 24x24 crops in training and each prediction averaged over 36
        crops at test (tasks/segmentation; the '<system>-crops' rows).
Sizes:  the networks have half the channels of DVN's and SEAL's (32/64/64 against 64/128/128) so that every
        method trains on a 2-core CPU; --config.model.channels='(64,128,128)' and energy_channels restore them.
Rows:   --config=configs/horses.py:ROW trains a row of docs/horses.md (its config column names the ROW), seed K
        with --config.seed=K. ROW = SYSTEM[,full]: SYSTEM a system of implicit_jax/experiments/horses.py (fcn,
        dvn, seal-regression, seal-nce, implicit-cd (this config as it is), implicit-cd-r1 (the implicit term solved
        on every step, this config's design until 2026-11-28), implicit-cd-t1-gcr,
        fcn-200 (with ",full" only), and fcn-crops, dvn-crops,
        seal-regression-crops, seal-nce-crops, implicit-cd-crops: the system with data.crop=24); ",full": the
        published channels (64, 128, 128) and 100 epochs, docs/horses.md's section "At the published width";
        ",seal": SEAL's protocol (its split sizes 160/40, 24x24 crops, 36-crop test, no flips, each rival with
        SEAL's chosen optimiser settings, 150 epochs; plus the row seal-regression-w), the section "At SEAL's
        protocol" (implicit_jax/experiments/horses.py: VARIANTS['seal'], SEAL_SETTINGS); ",seal-data": the same
        on SEAL's own split and Li et al.'s resizing (data.split='seal', data.resize='bicubic'), the section "At
        SEAL's protocol, on SEAL's data".
        The rows of an earlier design (implicit-cd-before, implicit-dvn: two inner steps, MINRES) are rerun
        from their records: --config=docs/horses/runs*/<run>.json.
"""

from implicit_jax.engine import config as config_lib
from implicit_jax.experiments import horses


def get_config(arg=None):
  c = config_lib.base_config(task='segmentation', method='implicit')
  c.model.channels = (32, 64, 64)
  c.model.energy_channels = (32, 64, 64)
  c.model.energy_hidden = (256, 128)
  c.implicit.primary_loss = 'cd'
  c.implicit.cost = 'iou'
  c.implicit.negatives.num_samples = 2
  # Two inner steps and the implicit term by one fused GCR pass (bilevel.implicit_gcr) instead of MINRES's 3 HVPs
  # (the former design, reproduce_horses.py's 'implicit-cd-before' row); one inner step at 3e-3 was cheaper still
  # but lost 1.9-5.3 dev IoU on every seed ('implicit-cd-t1-gcr'). Step times: docs/benchmarks.md, implicit_cost_horses.
  c.implicit.inner_steps = 2
  c.implicit.solver.name = 'gcr'
  c.implicit.solver.iterations = 1
  # The term solved on every third step and reused in between, as two compiled programs (solver.refresh_by
  # 'host': XLA:CPU runs a conditional's convolutions several times slower). Chosen on dev against the term every
  # step ('implicit-cd-r1'), paired by seed: docs/horses.md (both sections it ran in), docs/benchmarks.md.
  c.implicit.solver.refresh = 3
  c.implicit.solver.refresh_by = 'host'
  # Unrolled loops: XLA:CPU runs convolution gradients inside loops ~10x slower (bilevel.Solver.unroll).
  c.implicit.unroll = True
  c.gbi.unroll = True           # GBI (dvn, seal_static, spen, nce_gbi): unrolled, as above
  c.gbi.steps = 10
  c.gbi.step_size = 0.5
  # One learning rate for every network (3e-3: the FCN's dev IoU after 20 epochs rose from 0.64 at 1e-3 to 0.67),
  # except the implicit method's inference net, which takes two inner steps per batch at half of it.
  c.optimizer.learning_rate = 3e-3
  c.seal.task_optimizer.learning_rate = 3e-3
  c.nce_gbi.noise_optimizer.learning_rate = 3e-3
  c.implicit.inner_optimizer.learning_rate = 1.5e-3
  c.seal.energy_loss = 'regression'
  c.seal.num_samples = 4
  c.batch_size = 8
  c.eval_batch_size = 32
  c.num_epochs = 12
  c.log_every = 25
  c.checkpoint_every = 0
  return horses.apply(c, arg)
