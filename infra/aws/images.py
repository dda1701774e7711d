"""Which AMI boots a GPU of each generation on AWS (the catalog's `image_generation`, from the GPU's
compute capability): its NVIDIA driver must still support the GPU and be new enough for the
payload container's CUDA. Ubuntu only: it runs cloud-init, which reads our user-data.

- `cuda13` (cc >= 7.5): the OSS driver AMI (open kernel modules: Turing and newer only).
- `cuda12` (cc 5.0..7.0: M60, P100, V100): the proprietary driver AMI (the open modules lack Maxwell-Volta).
- `cuda11-legacy` (cc < 5.0: K80): CUDA 11 era builds (driver 470, the last with Kepler), deprecated
  upstream, hence `include_deprecated`; `gpubench:image` pins an exact AMI.
"""

from __future__ import annotations

from dataclasses import dataclass

from infra.images import lookup

OWNER = "amazon"


@dataclass(frozen=True)
class AwsImage:
    name_pattern: str
    include_deprecated: bool


IMAGES: dict[str, AwsImage] = {
    "cuda13": AwsImage("Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) *", include_deprecated=False),
    "cuda12": AwsImage(
        "Deep Learning Base Proprietary Nvidia Driver GPU AMI (Ubuntu 20.04) *", include_deprecated=True
    ),
    "cuda11-legacy": AwsImage("Deep Learning Base AMI (Ubuntu 18.04) Version *", include_deprecated=True),
}


def image_for(generation: str) -> AwsImage:
    return lookup(IMAGES, "aws", generation)
