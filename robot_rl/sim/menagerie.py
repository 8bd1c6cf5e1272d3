"""Optional visual fidelity: dress our arm in the MuJoCo Menagerie Panda meshes from a local checkout.

Only the *visual* geoms (Menagerie's ``class="visual"``) are copied onto our bodies of the same name
(``link0`` .. ``link7``, ``hand``, ``left_finger``, ``right_finger``: our frames follow the same published
kinematics). Collision geometry, inertials, controller and physics stay ours, so trajectories are identical
with and without the meshes; only rendered images change. Nothing is downloaded: the user points
``ArmEnvConfig.menagerie_panda_dir`` at ``mujoco_menagerie/franka_emika_panda``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

PREFIX = "menagerie_"


def add_menagerie_visuals(scene_xml: str, panda_dir: str | Path) -> str:
    """Return ``scene_xml`` with the Menagerie Panda's visual meshes attached and our primitives hidden."""
    panda_dir = Path(panda_dir).expanduser()
    model_file = panda_dir / "panda.xml"
    if not model_file.is_file():
        raise ValueError(
            f"ArmEnvConfig.menagerie_panda_dir: no panda.xml in {panda_dir} "
            "(expected a mujoco_menagerie/franka_emika_panda checkout)"
        )
    try:
        source = ET.parse(model_file).getroot()
    except ET.ParseError as err:
        raise ValueError(f"ArmEnvConfig.menagerie_panda_dir: cannot parse {model_file}: {err}") from err
    compiler = source.find("compiler")
    mesh_dir = panda_dir / (compiler.get("meshdir", "") if compiler is not None else "")

    scene = ET.fromstring(scene_xml)
    asset = scene.find("asset")
    assert asset is not None, "our scene always has an <asset> block"
    for material in source.iter("material"):
        if material.get("name"):
            asset.append(
                ET.Element("material", name=PREFIX + material.get("name"), rgba=material.get("rgba", "1 1 1 1"))
            )
    used_meshes: set[str] = set()
    our_bodies = {body.get("name"): body for body in scene.iter("body")}
    attached = 0
    for body in source.iter("body"):
        target = our_bodies.get(body.get("name"))
        if target is None:
            continue
        for geom in body.findall("geom"):
            if geom.get("class") != "visual" or not geom.get("mesh"):
                continue
            attrs = {
                "type": "mesh",
                "mesh": PREFIX + geom.get("mesh"),
                "contype": "0",
                "conaffinity": "0",
                "group": "2",
                "mass": "0",
            }
            if geom.get("material"):
                attrs["material"] = PREFIX + geom.get("material")
            for key in ("pos", "quat", "euler"):
                if geom.get(key):
                    attrs[key] = geom.get(key)
            target.append(ET.Element("geom", attrs))
            used_meshes.add(geom.get("mesh"))
            attached += 1
    if attached == 0:
        raise ValueError(
            f"ArmEnvConfig.menagerie_panda_dir: {model_file} has no class='visual' mesh geoms on "
            f"bodies named like ours ({sorted(n for n in our_bodies if n)})"
        )
    for mesh in source.iter("mesh"):
        file = mesh.get("file")
        name = mesh.get("name") or (Path(file).stem if file else None)
        if name in used_meshes and file:
            path = mesh_dir / file
            if not path.is_file():
                raise ValueError(f"ArmEnvConfig.menagerie_panda_dir: mesh file {path} is missing")
            asset.append(ET.Element("mesh", name=PREFIX + name, file=str(path.resolve())))
    # Hide our primitive arm geoms (they keep colliding): the meshes are what cameras should see.
    for default in scene.iter("default"):
        if default.get("class") == "arm_col":
            for geom in default.findall("geom"):
                geom.set("rgba", "0.92 0.92 0.95 0")
    return ET.tostring(scene, encoding="unicode")
