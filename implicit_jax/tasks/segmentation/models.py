"""Segmentation networks: a fully convolutional inference net and a convolutional energy over (image, mask).

Both read ``batch['x']`` [B, H, W, 3] (H and W divisible by 4). The design is DVN's and SEAL's (Gygli et al.
2017; Lee et al. 2022), after Long et al. (2015):

* ``FCN``, ``A_theta(x)``: three 5x5 convolutions (stride 1, 2, 2) give features at full, half and quarter
  resolution; a 1x1 convolution scores each scale, and the coarse scores are upsampled by learned 4x4 transposed
  convolutions (stride 2) and added to the next finer ones (FCN's skip connections). One logit per pixel.
* ``ConvEnergy``, ``E_phi(x, y)``: the image and the relaxed mask stacked as 4 channels, the same three strided
  convolutions, flattened, then dense layers to one scalar (lower is better; the sign is learned).
"""

from typing import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp


def _trunk(x, channels, kernel, name):
  """Features at strides 1, 2, 4."""
  feats = []
  for i, (c, stride) in enumerate(zip(channels, (1, 2, 2))):
    x = nn.relu(nn.Conv(c, (kernel, kernel), strides=stride, padding='SAME', name=f'{name}_{i}')(x))
    feats.append(x)
  return feats


class FCN(nn.Module):
  """``(batch, train) -> logits [B, H, W]`` (a tuple of ``heads`` of them, sharing the convolutions)."""

  channels: Sequence[int] = (64, 128, 128)
  kernel_size: int = 5
  dropout: float = 0.0
  heads: int = 1

  @nn.compact
  def __call__(self, batch: dict, train: bool = False):
    if len(self.channels) != 3:
      raise ValueError(f'model.channels: the FCN has three convolutions, got {tuple(self.channels)}')
    feats = _trunk(batch['x'], self.channels, self.kernel_size, 'conv')
    if self.dropout:
      feats = [nn.Dropout(self.dropout, deterministic=not train)(f) for f in feats]
    outputs = []
    for h in range(self.heads):
      s1, s2, s3 = (nn.Conv(1, (1, 1), name=f'score{i}_{h}')(f) for i, f in enumerate(feats))
      up = nn.ConvTranspose(1, (4, 4), strides=(2, 2), padding='SAME', use_bias=False, name=f'up2_{h}')(s3) + s2
      up = nn.ConvTranspose(1, (4, 4), strides=(2, 2), padding='SAME', use_bias=False, name=f'up1_{h}')(up) + s1
      outputs.append(up[..., 0])
    return outputs[0] if self.heads == 1 else tuple(outputs)


class ConvEnergy(nn.Module):
  """``(batch, y [..., B, H, W]) -> E [..., B]``; leading axes of y (negatives) share the image."""

  channels: Sequence[int] = (64, 128, 128)
  kernel_size: int = 5
  hidden: Sequence[int] = (384, 192)

  @nn.compact
  def __call__(self, batch: dict, y: jax.Array) -> jax.Array:
    x = batch['x']
    if y.shape[-3:] != x.shape[-4:-1]:
      raise ValueError(f'energy: mask shape {y.shape[-3:]} does not match the image shape {x.shape[-4:-1]}')
    lead = y.shape[:-3]
    images = jnp.broadcast_to(x, (*lead, *x.shape)).astype(y.dtype)
    z = jnp.concatenate([images, y[..., None]], axis=-1).reshape(-1, *x.shape[1:-1], x.shape[-1] + 1)
    z = _trunk(z, self.channels, self.kernel_size, 'conv')[-1]
    z = z.reshape(z.shape[0], -1)
    for i, width in enumerate(self.hidden):
      z = nn.relu(nn.Dense(width, name=f'dense_{i}')(z))
    return nn.Dense(1, name='out')(z)[:, 0].reshape(*lead, x.shape[0])
