"""Which AMI boots a GPU of each generation on AWS (data, not code).

The catalog gives every offering an `image_generation` from the GPU's compute
capability; the host image must carry an NVIDIA driver that still supports that
GPU *and* is new enough for the payload container's CUDA:

- `cuda13` (cc >= 7.5: T4, A10G, L4, A100, H100): "Deep Learning Base OSS Nvidia
  Driver GPU AMI (Ubuntu 22.04)" (open kernel modules, Turing and newer only).
- `cuda12` (cc 5.0..7.0: M60, P100, V100): "Deep Learning Base Proprietary Nvidia
  Driver GPU AMI (Ubuntu 20.04)" (the open modules do not support Maxwell/Pascal/Volta).
- `cuda11-legacy` (cc < 5.0: K80): "Deep Learning Base AMI (Ubuntu 18.04) Version *"
  builds of the CUDA 11 era (driver 470, the last branch with Kepler); deprecated
  upstream, hence `include_deprecated`; `gpubench:image` pins an exact AMI.

Only Ubuntu images are used: they run cloud-init, which reads our user-data.
"""

from __future__ import annotations

from dataclasses import dataclass

from infra.images import lookup

OWNER = "amazon"


@dataclass(frozen=True)
class AwsImage:
    name_pattern: str
    include_deprecated: bool
    legacy: bool = False


IMAGES: dict[str, AwsImage] = {
    "cuda13": AwsImage("Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) *", include_deprecated=False),
    "cuda12": AwsImage(
        "Deep Learning Base Proprietary Nvidia Driver GPU AMI (Ubuntu 20.04) *", include_deprecated=True
    ),
    "cuda11-legacy": AwsImage("Deep Learning Base AMI (Ubuntu 18.04) Version *", include_deprecated=True, legacy=True),
}


def image_for(generation: str) -> AwsImage:
    return lookup(IMAGES, "aws", generation)
