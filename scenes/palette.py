"""Colours and materials of the table, in one place; the projector palette switches them all at once.

Colours are written in sRGB hex (as a designer picks them) and handed to the shaders in linear light.
Meaning never rests on colour alone: pass/fail, accepted/replaced and lit/unlit also differ in shape or label.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from corpus.errors import InputError


def srgb(hexstr: str, alpha: float = 1.0) -> tuple[float, float, float, float]:
    h = hexstr.lstrip("#")
    rgb = [int(h[i:i + 2], 16) / 255.0 for i in (0, 2, 4)]
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    return (lin[0], lin[1], lin[2], alpha)


@dataclass(frozen=True)
class Material:
    color: tuple                # linear rgba
    metallic: float = 0.0
    roughness: float = 0.6
    emissive: float = 0.0

    def material_vec(self) -> tuple:
        return (self.metallic, self.roughness, self.emissive, 0.0)

    def with_color(self, color) -> "Material":
        return replace(self, color=color)


@dataclass(frozen=True)
class Palette:
    name: str
    background_top: tuple
    background_bottom: tuple
    iron: Material
    iron_light: Material
    meter_face: Material        # dark in every palette: the meters' white numbers must stand out
    brass: Material
    copper: Material
    steel: Material
    paper: Material
    wood: Material
    table_top: Material          # the table's own iron, a shade lighter than the parts' frames so they stand out
    oak: Material                # the KV cabinet: a card-index cabinet of oak, told from the iron by its colour
    glass: Material
    floor: Material
    lane_off: Material
    lane_on: Material
    bead_copper: Material
    bead_red: Material
    red_line: Material
    pencil: tuple               # text colours (linear rgba)
    ink: tuple
    label: tuple                # part labels on screen
    label_sub: tuple
    readout: tuple              # numbers engraved on brass plates
    plate: tuple                # backing plates for screen labels
    pass_mark: tuple
    fail_mark: tuple
    untested: tuple
    p_line: tuple               # the black line at the target's p
    q_line: tuple               # the green ring at the draft's q (the speculative rack)
    exposure: float = 1.0
    key_color: tuple = (3.1, 2.8, 2.4)
    fill_color: tuple = (0.55, 0.65, 0.85)
    sky: tuple = (0.55, 0.55, 0.6)
    ground: tuple = (0.12, 0.1, 0.09)
    extra: dict = field(default_factory=dict)


def _default() -> Palette:
    return Palette(
        name="default",
        background_top=srgb("#2b2d33")[:3],
        background_bottom=srgb("#0e0e10")[:3],
        iron=Material(srgb("#2a2c30"), metallic=0.55, roughness=0.55),
        iron_light=Material(srgb("#4a4d54"), metallic=0.6, roughness=0.45),
        meter_face=Material(srgb("#33363d"), metallic=0.3, roughness=0.7),
        brass=Material(srgb("#c9a04a"), metallic=0.9, roughness=0.32),
        copper=Material(srgb("#c8703f"), metallic=0.9, roughness=0.3),
        steel=Material(srgb("#a9afb8"), metallic=0.85, roughness=0.28),
        paper=Material(srgb("#efe4c8"), metallic=0.0, roughness=0.9),
        wood=Material(srgb("#5a3a24"), metallic=0.0, roughness=0.7),
        oak=Material(srgb("#7a5233"), metallic=0.0, roughness=0.6),
        table_top=Material(srgb("#43464e"), metallic=0.5, roughness=0.6),
        glass=Material(srgb("#cfe6ee", 0.22), metallic=0.0, roughness=0.05),
        floor=Material(srgb("#1b1a19"), metallic=0.0, roughness=0.95),
        lane_off=Material(srgb("#3b3f46"), metallic=0.7, roughness=0.4),
        lane_on=Material(srgb("#ffb84a"), metallic=0.2, roughness=0.3, emissive=0.9),
        bead_copper=Material(srgb("#d07a40"), metallic=0.8, roughness=0.25),
        bead_red=Material(srgb("#c4282c"), metallic=0.1, roughness=0.35),
        red_line=Material(srgb("#e8222a"), metallic=0.0, roughness=0.5, emissive=0.5),
        pencil=srgb("#5d5d62"),
        ink=srgb("#101426"),
        label=srgb("#f4ead2"),
        label_sub=srgb("#c9bfa6"),
        readout=srgb("#1d1a14"),
        plate=srgb("#14130f", 0.72),
        pass_mark=srgb("#2e7d4a"),
        fail_mark=srgb("#c4282c"),
        untested=srgb("#8a8578"),
        p_line=srgb("#050505"),
        q_line=srgb("#2fa83c"),
    )


def _projector() -> Palette:
    """Brighter, higher contrast: projectors wash out dark iron and thin strokes."""
    d = _default()
    return replace(
        d,
        name="projector",
        background_top=srgb("#4a4e58")[:3],
        background_bottom=srgb("#23252b")[:3],
        iron=Material(srgb("#4b4f57"), metallic=0.45, roughness=0.5),
        iron_light=Material(srgb("#6e737c"), metallic=0.5, roughness=0.45),
        table_top=Material(srgb("#60646d"), metallic=0.45, roughness=0.55),
        meter_face=Material(srgb("#25272c"), metallic=0.3, roughness=0.7),
        paper=Material(srgb("#fffaf0"), metallic=0.0, roughness=0.9),
        lane_on=Material(srgb("#ffd060"), metallic=0.1, roughness=0.3, emissive=1.3),
        pencil=srgb("#3e3e44"),
        ink=srgb("#000000"),
        label=srgb("#ffffff"),
        label_sub=srgb("#e8e2d0"),
        plate=srgb("#000000", 0.8),
        exposure=1.25,
    )


PALETTES = {"default": _default, "projector": _projector}


def get_palette(name: str) -> Palette:
    try:
        return PALETTES[name]()
    except KeyError:
        raise InputError(f"unknown palette {name!r} (choose from {', '.join(PALETTES)})") from None
