"""The act id: parse ("DU/2025/277", "Dz.U. 2025 poz. 277", file and folder names), validate, format."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pipeline.core.errors import InvalidActId, UsageError

PUBLISHERS = ("DU", "MP")


@dataclass(frozen=True, order=True)
class ActId:
    publisher: str
    year: int
    pos: int

    def __str__(self) -> str:
        return f"{self.publisher}/{self.year}/{self.pos}"

    @property
    def path(self) -> str:
        """The id as used in API paths and in the archive layout."""
        return str(self)


_ELI_RE = re.compile(r"(?i)(DU|MP)/(\d{4})/(\d{1,6})")
# "Dz.U. 2025 poz. 277", "Dz. U. z 2025 r. poz. 277", "M.P. 2025 poz. 5", "Dz.U. 1974 nr 24 poz. 141"
_CITATION_RE = re.compile(
    r"(?i)(dz\.?\s*u\.?|m\.?\s*p\.?)\s*(?:z\s+)?(\d{4})\s*(?:r\.)?\s*(?:nr\s*\d+\s*,?\s*)?poz\.?\s*(\d{1,6})"
)


def parse_act_id(text: str) -> ActId:
    """Parse "DU/2025/277", "du/2025/277" or "Dz.U. 2025 poz. 277" into an ActId."""
    if not isinstance(text, str):
        raise InvalidActId(f"invalid act id {text!r}: an act id is a string such as 'DU/2025/277'")
    s = text.strip()
    if m := _ELI_RE.fullmatch(s):
        pub, year, pos = m.group(1).upper(), int(m.group(2)), int(m.group(3))
    elif m := _CITATION_RE.fullmatch(s):
        pub = "DU" if m.group(1).lower().startswith("dz") else "MP"
        year, pos = int(m.group(2)), int(m.group(3))
    else:
        raise InvalidActId(
            f"invalid act id {s!r}: expected PUBLISHER/YEAR/POS such as DU/2025/277 "
            f"(publishers: {', '.join(PUBLISHERS)}) or 'Dz.U. 2025 poz. 277'"
        )
    if not 1918 <= year <= 2100 or pos < 1:
        raise InvalidActId(f"invalid act id {s!r}: year must be 1918-2100 and position at least 1")
    return ActId(pub, year, pos)


def as_act_id(act_id: ActId | str) -> ActId:
    return act_id if isinstance(act_id, ActId) else parse_act_id(act_id)


# --- folder form: {root}/acts/DU/2025/277 (the ELI mirror and archive layout) ---------------------

def act_dir(root: Path, act_id: ActId) -> Path:
    return Path(root) / "acts" / act_id.publisher / str(act_id.year) / str(act_id.pos)


def acts_in(root: Path) -> list[ActId]:
    """Every act of an archive in the mirror layout (a folder holding meta.json), in id order."""
    base = Path(root) / "acts"
    found = sorted(ActId(*_folder_parts(meta.parent)) for meta in base.glob("*/*/*/meta.json")
                   if meta.parent.name.isdigit() and meta.parent.parent.name.isdigit())
    if not found:
        raise UsageError(f"no acts in {root} (expected {base}/PUB/YEAR/POS/meta.json)")
    return found


def _folder_parts(folder: Path) -> tuple[str, int, int]:
    pub, year, pos = folder.parts[-3:]
    return pub, int(year), int(pos)


# --- file-name form: DU_2025_277.html, D20250277.pdf, acts/DU/2025/277/text.pdf ------------------

_FILE_ID = [
    re.compile(r"(?P<pub>DU|MP)[_/-](?P<year>\d{4})[_/-](?P<pos>\d+)", re.IGNORECASE),  # DU_2025_277.pdf
    re.compile(r"\b(?P<pub>D|M)(?P<year>\d{4})0*(?P<pos>[1-9]\d{0,3})L?j?\.(?:pdf|html?)$", re.IGNORECASE),  # D20250277.pdf
    re.compile(r"acts/(?P<pub>DU|MP)/(?P<year>\d{4})/(?P<pos>\d+)/text\.(?:pdf|html)$"),  # mirror layout
]


def act_id_from_path(path: Path) -> ActId:
    text = path.as_posix()
    for pattern in _FILE_ID:
        m = pattern.search(text)
        if m:
            pub = m.group("pub").upper()
            pub = {"D": "DU", "M": "MP"}.get(pub, pub)
            return parse_act_id(f"{pub}/{m.group('year')}/{int(m.group('pos'))}")
    raise InvalidActId(f"cannot tell the act of {path.name} from its name; pass --act DU/YYYY/POS")
