"""A slice of a field saved by `desync <solver> --save FILE.npy`: (nz, ny, nx) float64, or (ny, nx)."""
import os

import matplotlib.pyplot as plt
import numpy as np

from ..errors import UserError

_AXES = {"z": 0, "y": 1, "x": 2}


def load_field(path):
    path = os.fspath(path)
    if not path.endswith(".npy"):
        raise UserError(f"{path}: not a .npy field (save one with `desync <solver> --save FILE.npy`)")
    try:
        a = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except (ValueError, OSError) as e:
        raise UserError(f"{path}: not a NumPy .npy file ({e})") from None
    if a.ndim not in (2, 3):
        raise UserError(f"{path}: a field of {a.ndim} dimensions; expected (nz, ny, nx) or (ny, nx)")
    return a


def plot_field(a, axis="z", index=None, title=None):
    """The plane `index` (default the middle) normal to `axis` of a 3D field, or a 2D field as it is,
    with a colour bar."""
    if a.ndim == 3:
        if axis not in _AXES:
            raise UserError(f"unknown axis '{axis}' (use x, y or z)")
        n = a.shape[_AXES[axis]]
        k = n // 2 if index is None else index
        if not 0 <= k < n:
            raise UserError(f"--index {k} outside 0..{n - 1} along {axis}")
        plane = np.take(a, k, axis=_AXES[axis])
        names = {"z": ("x", "y"), "y": ("x", "z"), "x": ("y", "z")}[axis]
        where = f"{axis} index {k} of {n}"
    else:
        plane, names, where = a, ("x", "y"), "2D field"
    fig, ax = plt.subplots(figsize=(6, 5), layout="constrained")
    im = ax.imshow(plane, origin="lower", cmap="viridis", aspect="equal")
    fig.colorbar(im, ax=ax, label="u")
    ax.set_xlabel(f"{names[0]} index")
    ax.set_ylabel(f"{names[1]} index")
    ax.set_title(title or f"u, {where}")
    return fig
