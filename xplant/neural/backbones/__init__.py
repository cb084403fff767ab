"""xplant.neural.backbones."""
