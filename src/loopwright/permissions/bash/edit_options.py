"""The options of the commands that change files (GNU coreutils 9, sed 4), each with its whole
long-option list, so `--target=D` and `--li` mean what they mean to the program; and which of
them acceptEdits runs inside the writable roots. Pure tables."""

from __future__ import annotations

from .getopt import Spec

__all__ = ["EDITS", "LINKING", "SAFE_EDITS"]

_STD = " help version"


def _spec(short: str, long: str) -> Spec:
    return Spec(short, tuple((long + _STD).split()))


_CHANGES = "changes no-preserve-root preserve-root quiet silent recursive reference= verbose"

EDITS: dict[str, Spec] = {
    "cp": _spec("abdfHilLnpPrRsS:t:TuvxZ",
                "archive attributes-only backup=? copy-contents debug dereference force interactive link "
                "no-clobber no-dereference no-preserve= no-target-directory one-file-system parents preserve=? "
                "recursive reflink=? remove-destination sparse= strip-trailing-slashes suffix= symbolic-link "
                "target-directory= update=? verbose context=? keep-directory-symlink"),
    "mv": _spec("bfinS:t:TuvZ", "backup=? context debug exchange force interactive no-clobber no-copy "
                "no-target-directory strip-trailing-slashes suffix= target-directory= update=? verbose"),
    "ln": _spec("bdfFinLPrsS:t:Tv", "backup=? directory force interactive logical no-dereference physical "
                "relative suffix= symbolic target-directory= no-target-directory verbose"),
    "install": _spec("bcCdDg:m:o:psS:t:TvZ", "backup=? compare debug directory group= mode= owner= "
                     "preserve-timestamps strip strip-program= suffix= target-directory= no-target-directory "
                     "verbose preserve-context context=?"),
    "rm": _spec("dfiIrRv", "dir force interactive=? no-preserve-root one-file-system preserve-root=? recursive "
                "verbose"),
    "rmdir": _spec("pv", "ignore-fail-on-non-empty parents verbose"),
    "unlink": _spec("", ""),
    "shred": _spec("fn:s:uvxz", "force iterations= random-source= remove=? size= verbose exact zero"),
    "mkdir": _spec("m:pvZ", "mode= parents verbose context=?"),
    "touch": _spec("acd:fhmr:t:", "time= date= no-create no-dereference reference="),
    "tee": _spec("aip", "append ignore-interrupts output-error=?"),
    "truncate": _spec("cor:s:", "no-create io-blocks reference= size="),
    # chmod's modes may start with '-' (`chmod -x f`): its reader takes them before calling this.
    "chmod": _spec("cfvR", _CHANGES),
    "chown": _spec("cfhvRHLP", _CHANGES + " dereference no-dereference from="),
    "chgrp": _spec("cfhvRHLP", _CHANGES + " dereference no-dereference"),
    "sed": _spec("nrsuzEe:f:i::l:", "quiet silent debug expression= file= follow-symlinks in-place=? "
                 "line-length= null-data zero-terminated posix regexp-extended separate sandbox unbuffered "
                 "binary"),
    "sort": _spec("bcCdfghik:mMno:RrsS:t:T:uVz",
                  "ignore-leading-blanks check=? dictionary-order ignore-case general-numeric-sort "
                  "human-numeric-sort ignore-nonprinting key= merge month-sort numeric-sort random-sort "
                  "random-source= reverse sort= stable buffer-size= field-separator= unique version-sort "
                  "zero-terminated debug parallel= batch-size= compress-program= output= temporary-directory= "
                  "files0-from="),
}

SAFE_EDITS = frozenset({"mkdir", "touch", "mv", "cp"})  # acceptEdits runs these inside the roots
# Options of cp that make links, or copy links as links (so a later path may lead elsewhere).
LINKING = {"cp": frozenset({"s", "l", "P", "d", "a", "r", "R", "symbolic-link", "link", "no-dereference",
                            "archive", "recursive"})}
