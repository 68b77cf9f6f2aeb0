r"""Base config: every field documented here; the dataset configs import it and override what changes.

On its own it trains the implicit method on the built-in synthetic structured problem (tasks/synthetic.py, a
known answer: test example F1 can reach 1), a seconds-long smoke run that needs no data:
Run:    python -m implicit_jax.main --config=configs/default.py --workdir=/tmp/implicit_jax/default
"""

import ml_collections


def get_config():
  c = ml_collections.ConfigDict()
  c.seed = 0                     # parameter init, data order and sampling all derive from it
  c.task = 'synthetic'           # task registry name (implicit_jax/tasks)
  c.method = 'implicit'          # 'implicit' (the paper), 'feedforward' (MBCE baseline); energies trained alone,
                                 # prediction by gradient-based inference (config.gbi): 'spen', 'dvn', 'nce_gbi';
                                 # inference networks trained against an energy (config.infnet): 'infnet',
                                 # 'infnet_plus'; energy as a loss for a task net (config.seal): 'seal_static',
                                 # 'seal_dynamic'. implicit_jax/methods has one module per family.

  c.data = ml_collections.ConfigDict()
  c.data.seed = 0                # seed of the synthetic generator (fixed across runs: same problem)
  c.data.num_features = 32       # input dimension D
  c.data.num_groups = 6          # label groups; exactly one label per group is on
  c.data.group_size = 4          # labels per group (L = num_groups * group_size)
  c.data.num_train = 2048
  c.data.num_dev = 512
  c.data.num_test = 2048
  c.data.label_noise = 0.02      # fraction of train/dev label bits flipped (test stays clean)

  c.model = ml_collections.ConfigDict()
  c.model.inference_hidden = (128,)       # A_theta: hidden widths of the MLP inference net
  c.model.activation = 'relu'             # A_theta nonlinearity
  c.model.dropout = 0.0                   # A_theta dropout after each hidden layer (training only)
  c.model.energy_feature_hidden = (128,)  # E_phi: hidden widths of the feature MLP b(x)
  c.model.energy_feature_dim = 128        # E_phi: width of b(x)
  c.model.global_hidden = 16              # E_phi: rows of M in v^T softplus(M y)
  c.model.energy_activation = 'softplus'  # E_phi nonlinearity (smooth: the implicit gradient needs H)

  c.implicit = ml_collections.ConfigDict()
  c.implicit.inner_steps = 5              # T_inner: optimiser steps on L_aux per outer step (warm started)
  c.implicit.aux_lambda = 1.0             # lambda in L_aux = MBCE + lambda * E (Eq. 6)
  c.implicit.primary_loss = 'ssvm'        # L_prim: 'ssvm', 'cd', 'nce', 'dvn' or 'perceptron' (losses.py)
  c.implicit.cost = 'l1'                  # Delta(y_bar, y) of ssvm and cd: 'l1', 'hamming' or 'f1' (1 - soft F1)
  c.implicit.cost_scale = 1.0             # multiplies Delta
  c.implicit.refine_steps = 0             # prediction: 0 = A_theta(x) (the paper's choice); k > 0 = k GBI steps
                                          # on E_phi from A_theta(x) with gbi.step_size and gbi.rule (Remark 3)
  c.implicit.inner_optimizer = ml_collections.ConfigDict()
  c.implicit.inner_optimizer.name = 'adam'          # 'adam', 'sgd' or 'adamw'
  c.implicit.inner_optimizer.learning_rate = 1e-3

  c.negatives = ml_collections.ConfigDict()  # negatives y_bar drawn from A_theta(x) (negatives.py)
  c.negatives.num_samples = 0             # sampled negatives per example (K)
  c.negatives.include_mean = True         # also use the relaxed prediction A_theta(x) itself
  c.negatives.sampler = 'concrete'        # 'concrete' (relaxed Bernoulli), 'straight_through' or 'gaussian'
  c.negatives.temperature = 0.5           # concrete temperature
  c.negatives.scale = 0.1                 # gaussian noise scale

  c.solver = ml_collections.ConfigDict()  # inverse-HVP solver (implicit_jax.bilevel.Solver documents each)
  c.solver.name = 'normal_cg'             # 'normal_cg', 'minres', 'cg', 'neumann', 'dense', 'identity' or 'none'
  c.solver.iterations = 5                 # Neumann terms K / CG or MINRES max iterations
  c.solver.alpha = 0.03                   # Neumann step (upper bound when power_iters > 0)
  c.solver.power_iters = 0                # HVPs spent estimating lambda_max(H) to set the Neumann step
  c.solver.tol = 1e-4                     # CG / MINRES relative residual tolerance
  c.solver.damping = 1e-2                 # (H + damping I) u = v; normal_cg: (H^2 + damping I) u = H v
  c.solver.hvp = 'exact'                  # 'exact' (jvp of grad) or 'fd' (finite difference, the paper's)
  c.solver.fd_eps = 1e-3                  # finite-difference perturbation length
  c.solver.track_residual = True          # report ||(H + damping I) u - v|| / ||v|| each step

  c.gbi = ml_collections.ConfigDict()    # gradient-based inference over y in [0, 1]^L (inference.py): SPEN, DVN
  c.gbi.steps = 20                        # fixed number of steps (one lax.scan)
  c.gbi.step_size = 0.1                   # eta
  c.gbi.rule = 'projected'                # 'projected' (clip to the box) or 'mirror' (entropic mirror descent)
  c.gbi.init = 'half'                     # 'zeros', 'half' or 'given' (a starting y passed by the caller)
  c.gbi.tol = 0.0                         # an example stops once its energy changes less than this; 0 = never

  c.infnet = ml_collections.ConfigDict()  # InfNet (Tu & Gimpel 2018) and InfNet+ (Tu, Pang & Gimpel 2020)
  c.infnet.parameterization = 'separated'  # infnet_plus: cost-augmented net F and test-time net A are 'separated'
                                           # (two MLPs), 'shared' (one trunk, two heads) or 'stacked' (F(x, y) =
                                           # affine map of [A(x); y], no gradient into A when F is updated)
  c.infnet.perceptron_weight = 1.0         # infnet_plus: lambda on the perceptron term of the compound objective
  c.infnet.ce_weight = 1.0                 # weight of the local cross-entropy term in the inference nets' losses
  c.infnet.inference_steps = 1             # k: inference-net updates (on the batch) per energy update
  c.infnet.truncate = False                # keep the hinge [.]_+ in the inference nets' objectives (InfNet 2018
                                           # did; InfNet+ removes it). The energy's loss is always truncated
  c.infnet.finetune_epochs = 2             # infnet: the last epochs train A alone (from F) on E(x, A(x)) + CE,
                                           # the energy frozen (Tu & Gimpel's test-time inference network)
  c.infnet.inference_optimizer = ml_collections.ConfigDict()  # optimiser of F and A
  c.infnet.inference_optimizer.name = 'adam'
  c.infnet.inference_optimizer.learning_rate = 1e-3

  c.seal = ml_collections.ConfigDict()    # SEAL (Lee et al. 2022): an energy (loss-net) as the loss of a task net
  c.seal.energy_loss = 'nce'              # loss-net loss: 'margin', 'regression' (DVN), 'regression_s' (Gaussian
                                          # perturbations of the task net's output, negatives.scale, K =
                                          # negatives.num_samples) or 'nce' (K Bernoulli samples of the task net,
                                          # -log P_N correction)
  c.seal.energy_weight = 1.0              # lambda1 in the task-net loss lambda1 * E(x, F(x)) + lambda2 * BCE
  c.seal.bce_weight = 1.0                 # lambda2
  c.seal.pretrain_epochs = 5              # seal_static: epochs the loss-net trains first (the task net meanwhile
                                          # trains on BCE alone: the noise model of 'nce'); then it is frozen.
                                          # Must be < num_epochs
  c.seal.task_optimizer = ml_collections.ConfigDict()  # optimiser of the task net (the loss-net uses c.optimizer)
  c.seal.task_optimizer.name = 'adam'
  c.seal.task_optimizer.learning_rate = 1e-3

  c.optimizer = ml_collections.ConfigDict()  # outer optimiser (energy phi; the whole net for 'feedforward')
  c.optimizer.name = 'adam'
  c.optimizer.learning_rate = 1e-3

  c.batch_size = 32              # global batch, split over the devices of the ('data',) mesh
  c.num_devices = 0              # devices in the data-parallel mesh; 0 = all (every host's, when multi-host)
  c.num_epochs = 10
  c.log_every = 100              # steps between progress lines (the only host synchronisation)
  c.checkpoint_every = 1000      # steps between checkpoints in the workdir (also one at every epoch end); 0 = epoch
                                 # ends only. Rerunning with the same workdir resumes from the latest checkpoint
  return c
