"""Symmetry augmentation: isometries of the table plane acting on contract vectors, one rule per field kind.

A task declares a ``SymmetryGroup`` (its config's ``symmetry``): a mirror about a vertical plane, rotations about
a vertical axis, a K x K grid of planar translations, or a product of these. An element is the affine map
``x -> A x + b`` of the robot base frame with ``A = Rz(theta) M^s`` (``M = diag(1, -1, 1)``, ``s`` in {0, 1}) and
``b = (bx, by, 0)``: z, gravity and the table stay where they are. Each field of a layout moves by its kind
(``robot_rl.envs.contract.FieldKind``): points by ``A p + b``; vectors by ``A v``; pseudovectors by
``det(A) A w``; orientations ``R`` by ``A R D`` with ``D = M^s``, the body's own mirror in its x-z plane, so a
mirrored frame stays a right-handed rotation; scalars not at all; a ``fixed`` field refuses the group.

Elements are drawn per sampled transition and applied at sample time (``SymmetryAugmentation``, the learner's
``batch_transform``): the replay keeps the recorded transitions only, so memory does not grow with the number
of copies.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

import torch

from robot_rl.data.batch import Batch
from robot_rl.envs.contract import ACTION_HISTORY, ACTION_LAYOUT, BASE_ACTION, STATE_LAYOUT, Field, Layout


# ------------------------------------------------------------------------------------------ declared groups
@dataclass(frozen=True)
class Mirror:
    """Reflection about the vertical plane through ``point_xy`` whose normal points at ``normal_deg`` in the
    table plane (90: the plane y = const)."""

    normal_deg: float = 90.0
    point_xy: tuple[float, float] = (0.0, 0.0)


@dataclass(frozen=True)
class Rotation:
    """Rotations about the vertical axis through ``center_xy`` by an angle uniform in [-max_deg, max_deg]."""

    max_deg: float = 30.0
    center_xy: tuple[float, float] = (0.0, 0.0)

    def __post_init__(self) -> None:
        if not 0 < self.max_deg <= 180:
            raise ValueError(f"Rotation.max_deg must be in (0, 180], got {self.max_deg}")


@dataclass(frozen=True)
class TranslationGrid:
    """Planar translations to the centres of a ``cells`` x ``cells`` grid over a square ``width_m`` wide
    centred on the recorded state (SymmGrid); an odd ``cells`` includes the identity."""

    cells: int = 3
    width_m: float = 0.1

    def __post_init__(self) -> None:
        if self.cells < 1:
            raise ValueError(f"TranslationGrid.cells must be >= 1, got {self.cells}")
        if not 0 < self.width_m <= 1.0:
            raise ValueError(f"TranslationGrid.width_m must be in (0, 1] m, got {self.width_m}")

    def offsets(self) -> torch.Tensor:
        centres = ((torch.arange(self.cells, dtype=torch.float64) + 0.5) / self.cells - 0.5) * self.width_m
        return torch.cartesian_prod(centres, centres).float()  # [K*K, 2]


@dataclass(frozen=True)
class SymmetryGroup:
    """A task's symmetries: an element is (translation) o (rotation) o (mirror, or not), each part drawn on
    its own. All parts None: the task has no declared symmetry."""

    mirror: Mirror | None = None
    rotation: Rotation | None = None
    translation: TranslationGrid | None = None

    @property
    def declared(self) -> bool:
        return any(p is not None for p in (self.mirror, self.rotation, self.translation))

    def describe(self) -> str:
        parts = []
        if self.mirror is not None:
            parts.append(f"mirror (normal {self.mirror.normal_deg:g} deg through {self.mirror.point_xy})")
        if self.rotation is not None:
            parts.append(f"rotations up to {self.rotation.max_deg:g} deg about {self.rotation.center_xy}")
        if self.translation is not None:
            t = self.translation
            parts.append(f"{t.cells}x{t.cells} translations over {t.width_m:g} m")
        return " x ".join(parts) or "none"


# ------------------------------------------------------------------------------------------------ elements
@dataclass
class Elements:
    """One group element per row: ``A = Rz(theta) M^reflect``, ``b = (shift, 0)``."""

    theta: torch.Tensor  # float32 [B], rad
    reflect: torch.Tensor  # bool [B]
    shift: torch.Tensor  # float32 [B, 2], m

    def __len__(self) -> int:
        return self.theta.shape[0]

    @staticmethod
    def identity(n: int, device: torch.device | str | None = None) -> Elements:
        return Elements(torch.zeros(n, device=device), torch.zeros(n, dtype=torch.bool, device=device),
                        torch.zeros(n, 2, device=device))

    @staticmethod
    def mirror(normal_deg: float, point_xy: tuple[float, float] = (0.0, 0.0), n: int = 1) -> Elements:
        """Reflection about the vertical plane through ``point_xy`` with normal angle ``normal_deg``: its
        linear part is ``Rz(2 alpha - pi) M``, and it fixes ``point_xy``."""
        theta = torch.full((n,), 2 * math.radians(normal_deg) - math.pi)
        return _fixing(Elements(theta, torch.ones(n, dtype=torch.bool), torch.zeros(n, 2)), point_xy)

    @staticmethod
    def rotation(theta: torch.Tensor, center_xy: tuple[float, float] = (0.0, 0.0)) -> Elements:
        n = theta.shape[0]
        return _fixing(Elements(theta.float(), torch.zeros(n, dtype=torch.bool), torch.zeros(n, 2)), center_xy)

    @staticmethod
    def translation(shift: torch.Tensor) -> Elements:
        n = shift.shape[0]
        return Elements(torch.zeros(n), torch.zeros(n, dtype=torch.bool), shift.float())

    def matrix(self) -> torch.Tensor:
        """The linear parts ``A`` [B, 3, 3] (computed once: elements are not changed in place)."""
        cached = self.__dict__.get("_matrix")
        if cached is not None:
            return cached
        c, s = torch.cos(self.theta), torch.sin(self.theta)
        flip = torch.where(self.reflect, -1.0, 1.0).to(c.dtype)
        a = torch.zeros(len(self), 3, 3, dtype=c.dtype, device=c.device)
        a[:, 0, 0], a[:, 0, 1] = c, -s * flip
        a[:, 1, 0], a[:, 1, 1] = s, c * flip
        a[:, 2, 2] = 1.0
        self.__dict__["_matrix"] = a
        return a

    def det(self) -> torch.Tensor:
        """det(A): -1 for a reflection, +1 otherwise [B]."""
        return torch.where(self.reflect, -1.0, 1.0).to(self.theta.dtype)

    def compose(self, other: Elements) -> Elements:
        """``self o other`` (apply ``other`` first): ``M Rz(t) = Rz(-t) M`` moves the mirrors right."""
        theta = self.theta + torch.where(self.reflect, -other.theta, other.theta)
        shift = _rotate_xy(self, other.shift) + self.shift
        return Elements(theta, self.reflect ^ other.reflect, shift)

    def inverse(self) -> Elements:
        theta = torch.where(self.reflect, self.theta, -self.theta)
        inv = Elements(theta, self.reflect.clone(), torch.zeros_like(self.shift))
        return Elements(theta, self.reflect.clone(), -_rotate_xy(inv, self.shift))

    def to(self, device: torch.device | str) -> Elements:
        return Elements(self.theta.to(device), self.reflect.to(device), self.shift.to(device))

    def where(self, keep: torch.Tensor, other: Elements | None = None) -> Elements:
        """These elements where ``keep`` [B] is true, ``other`` (default: the identity) elsewhere."""
        other = other or Elements.identity(len(self), self.theta.device)
        return Elements(torch.where(keep, self.theta, other.theta), torch.where(keep, self.reflect, other.reflect),
                        torch.where(keep[:, None], self.shift, other.shift))


def _apply(a: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Row-wise ``a[b] @ v[b]`` for [B, k, k] and [B, k]."""
    return (a @ v.unsqueeze(-1)).squeeze(-1)


def _rotate_xy(g: Elements, xy: torch.Tensor) -> torch.Tensor:
    return _apply(g.matrix()[:, :2, :2].to(xy.dtype), xy)


def _fixing(linear: Elements, point_xy: tuple[float, float]) -> Elements:
    """The element with ``linear``'s linear part that leaves ``point_xy`` where it is: ``b = p - A p``."""
    p = torch.tensor(point_xy, dtype=torch.float32).expand(len(linear), 2)
    return Elements(linear.theta, linear.reflect, p - _rotate_xy(linear, p))


def draw_elements(group: SymmetryGroup, n: int, generator: torch.Generator) -> Elements:
    """``n`` elements, each part drawn independently and uniformly (mirror with probability 1/2)."""
    g = Elements.identity(n)
    if group.mirror is not None:
        flips = torch.rand(n, generator=generator) < 0.5
        g = Elements.mirror(group.mirror.normal_deg, group.mirror.point_xy, n).where(flips)
    if group.rotation is not None:
        r = group.rotation
        theta = (torch.rand(n, generator=generator) * 2 - 1) * math.radians(r.max_deg)
        g = Elements.rotation(theta, r.center_xy).compose(g)
    if group.translation is not None:
        offsets = group.translation.offsets()
        pick = torch.randint(len(offsets), (n,), generator=generator)
        g = Elements.translation(offsets[pick]).compose(g)
    return g


# --------------------------------------------------------------------------------------- rules per kind
def _quat_mul(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    pw, px, py, pz = p.unbind(-1)
    qw, qx, qy, qz = q.unbind(-1)
    return torch.stack([pw * qw - px * qx - py * qy - pz * qz, pw * qx + px * qw + py * qz - pz * qy,
                        pw * qy - px * qz + py * qw + pz * qx, pw * qz + px * qy - py * qx + pz * qw], -1)


def transform_field(kind: str, values: torch.Tensor, g: Elements) -> torch.Tensor:
    """``values`` [B, size] of one field of ``kind`` moved by ``g`` (row by row)."""
    if kind == "scalar":
        return values
    a = g.matrix().to(values.dtype)
    size = values.shape[1]
    if kind in ("point", "vector"):
        out = _apply(a[:, :size, :size], values)
        if kind == "vector":
            return out
        shift = torch.cat([g.shift, torch.zeros_like(g.shift[:, :1])], 1).to(values.dtype)
        return out + shift[:, :size]
    if kind == "axial":
        return g.det().to(values.dtype)[:, None] * _apply(a, values)
    if kind == "rot6d":  # columns c1, c2 of R: A R D keeps c1 -> A c1 and turns c2 -> det(A) A c2
        c1 = _apply(a, values[:, :3])
        c2 = g.det().to(values.dtype)[:, None] * _apply(a, values[:, 3:])
        return torch.cat([c1, c2], 1)
    if kind == "quaternion":  # (w, x, y, z): M R M is (w, -x, y, -z); then Rz(theta) on the left
        mirrored = torch.where(g.reflect[:, None], values * values.new_tensor([1.0, -1.0, 1.0, -1.0]), values)
        half = g.theta.to(values.dtype) / 2
        zero = torch.zeros_like(half)
        return _quat_mul(torch.stack([torch.cos(half), zero, zero, torch.sin(half)], -1), mirrored)
    raise SymmetryError(f"a {kind!r} field cannot be transformed")


class SymmetryError(ValueError):
    """A declared group cannot act on an observation: names the field and why."""


class LayoutTransform:
    """Moves whole vectors of one layout; refuses a layout with a ``fixed`` field up front."""

    def __init__(self, layout: Layout, where: str) -> None:
        fixed = [f.name for f in layout.fields if f.kind == "fixed"]
        if fixed:
            raise SymmetryError(
                f"{where} field(s) {fixed} have kind 'fixed' (e.g. joint angles) and cannot follow a mirror, "
                "rotation or translation of the workspace: declare their kind in the layout, leave them out of "
                "the observation, or train without --symmetry")
        self.layout = layout
        self.moving = [(layout.slice(f.name), f.kind) for f in layout.fields if f.kind != "scalar"]
        self.points = [layout.slice(f.name) for f in layout.fields if f.kind == "point"]

    def __call__(self, values: torch.Tensor, g: Elements) -> torch.Tensor:
        out = values.clone()
        for sl, kind in self.moving:
            out[:, sl] = transform_field(kind, values[:, sl], g)
        return out


# ------------------------------------------------------------------------------------------ the transform
SymmetryMode = Literal["off", "random", "copies"]
DRAWS = 4
"""Elements drawn for a row before it stays as recorded (every draw leaving the workspace or action box)."""


@dataclass(frozen=True)
class SymmetryConfig:
    """Symmetry augmentation of sampled batches (demos and online data alike) by the task's declared group."""

    mode: SymmetryMode = "off"
    """``random``: a ``fraction`` of each batch is replaced by copies moved by a random group element;
    ``copies``: each drawn transition appears once as recorded and ``copies`` times moved by distinct draws."""
    fraction: float = 0.5
    """Share of each batch that is transformed (``random``)."""
    copies: int = 3
    """Transformed copies per drawn transition (``copies``); the transformed share is copies / (copies + 1)."""
    actions: bool = True
    """Move the actions with the states. False only for the ablation that shows why they must be."""
    force: bool = False
    """Train even if ``robot-rl check-symmetry`` finds the group does not hold in simulation."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.fraction <= 1.0:
            raise ValueError(f"SymmetryConfig.fraction must be in [0, 1], got {self.fraction}")
        if self.copies < 1:
            raise ValueError(f"SymmetryConfig.copies must be >= 1, got {self.copies}")


@dataclass(frozen=True)
class Workspace:
    """Where a transformed transition is still one the env can produce: every point's xy inside the box and
    every action entry inside [-1, 1] (a rotated action can leave the action box). A row whose element breaks
    this draws another (``DRAWS`` in all), then stays as recorded."""

    xy_low: tuple[float, float]
    xy_high: tuple[float, float]


ImageTransform = Callable[[torch.Tensor, Elements], torch.Tensor]


class SymmetryAugmentation:
    """The learner's ``batch_transform``: transforms part of each batch by the task's group.

    ``layouts`` names the layout of each vector observation key (``state``, ``privileged``, ``base_action``),
    ``images`` the transform of each image key (``robot_rl.data.image_symmetry.transform_images`` with the
    camera's rule); any other key is refused. Images are transformed as they are sampled: the replay holds
    each recorded frame once whatever the number of copies.
    """

    def __init__(self, group: SymmetryGroup, config: SymmetryConfig, layouts: Mapping[str, Layout],
                 workspace: Workspace, seed: int = 0, images: Mapping[str, ImageTransform] | None = None) -> None:
        if not group.declared:
            raise SymmetryError("the task declares no symmetry group")
        self.group, self.config, self.workspace = group, config, workspace
        self.obs = {key: LayoutTransform(layout, f"observation {key!r}") for key, layout in layouts.items()}
        self.images = dict(images or {})
        self.action = LayoutTransform(ACTION_LAYOUT, "action")
        self.generator = torch.Generator().manual_seed(seed)
        self.last_transformed_fraction = 0.0

    def rows(self, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(source row, transform it?) for each of ``n`` output rows."""
        c = self.config
        if c.mode == "copies":
            block = c.copies + 1
            index = torch.arange(n)
            return index - index % block, index % block != 0
        return torch.arange(n), torch.rand(n, generator=self.generator) < c.fraction

    def __call__(self, batch: Batch) -> Batch:
        missing = set(batch.obs) - set(self.obs) - set(self.images)
        if missing:
            raise SymmetryError(f"observation keys {sorted(missing)} have no declared layout to transform")
        n, device = len(batch), batch.action.device
        source, move = self.rows(n)
        source, move = source.to(device), move.to(device)
        pick = lambda d: {k: v.index_select(0, source) for k, v in d.items()}  # noqa: E731
        obs, next_obs, action = pick(batch.obs), pick(batch.next_obs), batch.action.index_select(0, source)
        # DRAWS candidate elements per row, all moved in one pass: candidate j of row i is row j * n + i
        candidates = draw_elements(self.group, DRAWS * n, self.generator).to(device)
        tile = lambda v: v.repeat(DRAWS, *[1] * (v.dim() - 1))  # noqa: E731
        moved_obs = {k: self.obs[k](tile(v), candidates) for k, v in obs.items() if k in self.obs}
        moved_next = {k: self.obs[k](tile(v), candidates) for k, v in next_obs.items() if k in self.obs}
        moved_action = self.action(tile(action), candidates) if self.config.actions else tile(action)
        valid = self._valid(moved_obs, moved_next, moved_action).view(DRAWS, n)
        take = move & valid.any(0)  # rows that get an element; the others stay as recorded
        first = valid.float().argmax(0)  # the first candidate that stays in the workspace and action box
        chosen_row = first * n + torch.arange(n, device=device)
        chosen = Elements(candidates.theta[chosen_row], candidates.reflect[chosen_row],
                          candidates.shift[chosen_row]).where(take)
        select = lambda moved, old: _rows_where(take, moved.index_select(0, chosen_row), old)  # noqa: E731
        out_obs = {k: select(v, obs[k]) for k, v in moved_obs.items()}
        out_next = {k: select(v, next_obs[k]) for k, v in moved_next.items()}
        self.last_transformed_fraction = float(take.float().mean())
        for key, transform in self.images.items():
            if key in obs:
                out_obs[key], out_next[key] = transform(obs[key], chosen), transform(next_obs[key], chosen)
        return dataclasses.replace(
            batch, obs=out_obs, next_obs=out_next, action=select(moved_action, action),
            reward=batch.reward.index_select(0, source),
            discount=batch.discount.index_select(0, source),
            extras={k: v.index_select(0, source) for k, v in batch.extras.items()},
        )

    def _valid(self, obs: dict[str, torch.Tensor], next_obs: dict[str, torch.Tensor],
               action: torch.Tensor) -> torch.Tensor:
        lo = torch.tensor(self.workspace.xy_low, device=action.device)
        hi = torch.tensor(self.workspace.xy_high, device=action.device)
        ok = (action.abs() <= 1.0 + 1e-6).all(1)
        for d in (obs, next_obs):
            for key, values in d.items():
                transform = self.obs[key]
                for sl in transform.points:
                    xy = values[:, sl][:, :2]
                    ok &= ((xy >= lo) & (xy <= hi)).all(1)
                if key in (BASE_ACTION, ACTION_HISTORY):
                    ok &= (values.abs() <= 1.0 + 1e-6).all(1)
        return ok


def _rows_where(mask: torch.Tensor, new: torch.Tensor, old: torch.Tensor) -> torch.Tensor:
    return torch.where(mask.view(-1, *[1] * (old.dim() - 1)), new, old)


def contract_layouts(privileged: tuple[Field, ...], base_action: bool, action_history: int = 0) -> dict[str, Layout]:
    """The layouts of a contract observation: ``state``, the task's ``privileged`` (if any), ``base_action``,
    ``previous_actions`` (``action_history`` actions, newest first)."""
    layouts = {"state": STATE_LAYOUT}
    if privileged:
        layouts["privileged"] = Layout(privileged)
    if base_action:
        layouts[BASE_ACTION] = ACTION_LAYOUT
    if action_history:
        layouts[ACTION_HISTORY] = Layout(tuple(dataclasses.replace(f, name=f"{f.name}[t-{i + 1}]")
                                               for i in range(action_history) for f in ACTION_LAYOUT.fields))
    return layouts
