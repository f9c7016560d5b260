"""The tokens and vectors of the tiny stand-in model that `embedding.build_tiny_model` writes:
a few thousand English and programming words, and pseudo-random vectors in which words sharing a
stem or a line of related words point the same way. Plain Python, so the same on every machine.
"""

from __future__ import annotations

import hashlib
import math
import struct
from collections.abc import Sequence

__all__ = ["tokens", "vectors"]

# Words on one line of _RELATED share a direction, so texts that use different words for one
# idea still land near each other; the rest is plain vocabulary.
_RELATED = """\
error bug fault failure defect exception crash broken problem issue regression
fix patch repair resolve correct workaround hotfix
fast quick rapid speed speedy swift performance latency throughput
slow sluggish lag laggy delay
database db sql postgres postgresql sqlite mysql
query queries lookup search find recall retrieve
test tests testing pytest unittest assertion assert spec fixture
delete remove drop erase purge wipe
create add insert make new generate
update change modify edit alter
config configuration settings setting options preferences toml yaml ini
auth authentication authorization login logon signin session
password credential secret token apikey key
deploy deployment release ship publish rollout
cache caching memoize memo
memory ram heap allocation leak
network http https request response socket connection
api endpoint route handler rest
git commit branch merge rebase repository repo checkout
docs documentation readme guide manual tutorial
user customer client account member
function method procedure routine callable
variable field attribute property parameter argument
file path directory folder
build compile compiler bundle
dependency dependencies package library module import requirement
log logging logger trace tracing
container docker image kubernetes pod
python pip venv virtualenv
javascript node npm typescript
thread concurrency concurrent parallel async await lock mutex race deadlock
timeout deadline hang stall freeze
big large huge massive enormous
small little tiny minor
start begin launch boot
stop end halt terminate kill shutdown
car automobile vehicle truck
dog puppy hound
cat kitten feline
happy glad joyful cheerful
sad unhappy sorrow gloomy
food meal dinner lunch breakfast eat
rain weather storm cloud sunny
money price cost payment invoice billing
email mail message inbox notification
server host machine node
disk storage volume
cpu processor core
json serialize serialization marshal encode decode
date time timestamp timezone clock calendar
sort order rank ranking
migrate migration upgrade
security vulnerability exploit attack
encrypt encryption cipher crypto tls ssl certificate
backup snapshot archive restore
refactor refactoring cleanup rewrite restructure
review approve approval feedback
plan roadmap schedule milestone
meeting call discussion sync
decision decide choice chose choose
prefer preference favorite like
"""
# Function words get short vectors: they say little about what a text is about (real models
# learn this from word frequency).
_FUNCTION_WORDS = """\
the a an and or but if then else when while for of to in on at by with from as is are was
were be been being have has had do does did not no yes this that these those it its they them
their there here what which who whom whose why how all any some each every many much more most
few less least other another same such only own so than too very can will just should would
could may might must shall about above after again against before below between both during
into through under until up down out over off once further also always never often sometimes
i me my we our you your he him his she her us
"""
_WORDS = """\
now today tomorrow yesterday week month year day night morning evening hour minute second
first last next previous early late old young good bad better best worse worst high low long
short right left wrong true false open close closed full empty hot cold easy hard simple
complex clear dark light heavy new main same different important possible able available
person people man woman child friend team group company office home house room door window
water tree garden city country world road street place area side part point way thing work
job task project problem question answer idea reason result example case fact story word
name number letter page book paper note list line table chart picture report
say said tell told ask asked know knew think thought see saw look looked want wanted need
use used try tried give gave take took get got go went come came keep kept let put set show
help call move live play run read write wrote learn teach understand remember forget explain
describe happen seem feel leave turn bring hold stand sit buy sell pay send receive lose win
code program software system application app service tool script command shell terminal
data value type string integer float boolean array list dict dictionary map set tuple object
class interface protocol struct enum constant default null none undefined
loop iterate recursion return yield raise throw catch try finally
index key hash checksum digest vector embedding model
input output stdin stdout stderr stream buffer pipe
text markdown frontmatter header footer body title abstract summary tag label
record records note memory memories store recall agent agents
version schema format spec validation validate check lint linter
source target local remote origin upstream push pull fetch clone
diff patch conflict history log status head tree blob
hook hooks plugin extension integration adapter
cli flag option argument prompt
error warning info debug verbose quiet
test benchmark profile metric measure
process thread worker queue job scheduler cron
event signal handler callback listener
state status mode flag
path url uri domain port address
graph node edge link links
ranking score scores weight weights decay fusion
filter filters scope private public shared
linux windows macos unix kernel
rust go java ruby php swift kotlin scala haskell
react vue angular svelte html css browser frontend backend
sql nosql redis mongodb elasticsearch kafka
aws azure gcp cloud lambda bucket
ci pipeline workflow action actions runner
terraform ansible nginx apache
"""
_PIECES = "s es ed ing er ers ly tion ions ment able ize ized"


def tokens(vocab: Sequence[str] | None = None) -> list[str]:
    """The tokenizer's tokens in id order: [PAD], [UNK], the words (``vocab`` lower-cased, or
    the lists above with their inflections), then WordPiece suffixes and single characters."""
    if vocab is None:
        words = _FUNCTION_WORDS.split()
        words += [f for w in (_RELATED + _WORDS).split() for f in _inflections(w)]
    else:
        words = [w.lower() for w in vocab]
    pieces = [f"##{p}" for p in _PIECES.split()]
    pieces += list("abcdefghijklmnopqrstuvwxyz0123456789")
    pieces += [f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz0123456789"]
    return list(dict.fromkeys(["[PAD]", "[UNK]", *words, *pieces]))


def vectors(tokens: Sequence[str], dim: int, seed: int) -> list[list[float]]:
    """One vector of ``dim`` numbers per token: zero for [PAD] and [UNK]; short for pieces,
    letters and function words, which carry little meaning and so barely turn the mean of a
    text made mostly of content words; of length 1 for words, built from their stem, the word
    itself and their line of related words."""
    groups = {_stem(w): i for i, line in enumerate(_RELATED.splitlines()) for w in line.split()}
    function_words = set(_FUNCTION_WORDS.split())
    out = []
    for token in tokens:
        if token in ("[PAD]", "[UNK]"):
            out.append([0.0] * dim)
        elif token.startswith("##") or len(token) == 1 or token in function_words:
            out.append([0.2 * x for x in _unit(f"piece:{token}", seed, dim)])
        else:
            root = _stem(token)
            stem_part = _unit(f"stem:{root}", seed, dim)
            word_part = _unit(f"word:{token}", seed, dim)
            vector = [0.6 * a + 0.3 * b for a, b in zip(stem_part, word_part, strict=True)]
            if root in groups:
                group = _unit(f"group:{groups[root]}", seed, dim)
                vector = [x + g for x, g in zip(vector, group, strict=True)]
            out.append(_scaled(vector))
    return out


def _unit(key: str, seed: int, dim: int) -> list[float]:
    """A unit vector that depends only on ``seed`` and ``key`` (a hash, not an RNG, so it is
    the same on every platform and cheap for thousands of keys)."""
    raw = hashlib.shake_256(f"{seed}:{key}".encode()).digest(2 * dim)
    return _scaled([n / 32767.5 - 1.0 for n in struct.unpack(f"<{dim}H", raw)])


def _scaled(vector: list[float]) -> list[float]:
    norm = math.hypot(*vector)
    return [x / norm for x in vector]


def _stem(word: str) -> str:
    """A crude stemmer, enough for "fixes", "fixed" and "fixing" to share "fix"."""
    for suffix, keep in (
        ("ies", "y"),
        ("ied", "y"),
        ("ings", ""),
        ("ing", ""),
        ("ers", ""),
        ("er", ""),
        ("es", ""),
        ("ed", ""),
        ("ly", ""),
        ("s", ""),
        ("e", ""),
    ):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: len(word) - len(suffix)] + keep
    return word


def _inflections(word: str) -> list[str]:
    if not word.isalpha() or len(word) < 3:
        return [word]
    if word.endswith(("s", "x", "z", "ch", "sh")):
        plural = word + "es"
    elif word.endswith("y") and word[-2] not in "aeiou":
        plural = word[:-1] + "ies"
    else:
        plural = word + "s"
    base = word[:-1] if word.endswith("e") else word
    return [word, plural, base + "ed", base + "ing", base + "er"]
