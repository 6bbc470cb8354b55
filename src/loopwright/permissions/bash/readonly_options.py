"""The read-only commands and, for each, the options that keep it read-only (an allowlist: an
option not listed makes the call not read-only), taken from the programs' own option lists
(GNU coreutils 9, grep 3, findutils 4.9, util-linux, jq 1.6, ripgrep 14, tree 2). `others`
names the rest of a program's long options, which decide what an abbreviation means. Pure."""

from __future__ import annotations

from .getopt import Cmd, Spec

__all__ = ["READ_ONLY"]

_STD = " help version"


def _spec(short: str, long: str = "", others: str = "", **kw: bool) -> Spec:
    return Spec(short, tuple((long + _STD).split()), tuple(others.split()), **kw)


def _cmd(short: str, long: str = "", others: str = "", *, operands: str = "paths", reads: str = "",
         recurse: str = "", tree: bool = False, default: str | None = None, max_paths: int | None = None,
         pattern: str = "", **kw: bool) -> Cmd:
    return Cmd(_spec(short, long, others, **kw), operands, tuple(reads.split()), tuple(recurse.split()), tree,
               default, max_paths, tuple(pattern.split()))


_SUMS = _cmd("btz", "binary text tag zero", "check ignore-missing quiet status strict warn")
_GREP = _cmd(
    "A:B:C:D:EFGHIJLPTUVX:abcd:e:f:hilm:noqrsuvwxyZz",
    "after-context= before-context= context=? basic-regexp binary binary-files= byte-offset color=? colour=? "
    "count devices= directories= exclude= exclude-dir= exclude-from= extended-regexp file= files-with-matches "
    "files-without-match fixed-strings group-separator= no-group-separator ignore-case no-ignore-case include= "
    "initial-tab invert-match label= line-buffered line-number line-regexp max-count= no-filename no-messages "
    "null null-data only-matching perl-regexp quiet recursive regexp= silent text with-filename word-regexp",
    "dereference-recursive", operands="pattern", reads="f file exclude-from", recurse="r recursive",
    pattern="e regexp f file", number=True)
# ripgrep reads no abbreviations; -L/--follow, --pre, -z (runs decompressors) and
# --hostname-bin are left out.
_RG = _cmd(
    "A:B:C:E:FHIM:NPST:Uabcd:e:f:g:hij:lm:nopqr:st:uvwx0",
    "after-context= before-context= context= encoding= fixed-strings with-filename no-filename max-columns= "
    "no-line-number pcre2 smart-case type-not= multiline text count max-depth= regexp= file= glob= iglob= "
    "ignore-case threads= files-with-matches files-without-match max-count= line-number only-matching pretty "
    "quiet replace= case-sensitive type= unrestricted invert-match word-regexp line-regexp null hidden "
    "no-ignore no-ignore-vcs no-ignore-dot no-ignore-parent no-ignore-global no-ignore-exclude no-messages "
    "ignore-file= files type-list json sort= sortr= column no-heading heading vimgrep trim color= colors= "
    "stats one-file-system max-filesize= byte-offset count-matches crlf engine= fixed-strings glob-case-insensitive "
    "ignore-case include-zero line-buffered block-buffered max-columns-preview no-config no-unicode passthru "
    "multiline-dotall null-data path-separator= field-match-separator= field-context-separator= context-separator= "
    "no-context-separator auto-hybrid-regex binary no-binary follow-not type-clear= type-add= debug trace",
    operands="pattern", reads="f file ignore-file", tree=True, default=".", pattern="e regexp f file files type-list",
    prefixes=False)

# Operands: "paths" are read; "none" are not paths; "pattern": the first is a pattern or a
# program unless an option gave one; "format": each must start with + (date sets the clock
# otherwise); "nothing": an operand changes something.
READ_ONLY: dict[str, Cmd] = {
    "cat": _cmd("AbeEnstTuv", "show-all number-nonblank show-ends number squeeze-blank show-tabs show-nonprinting"),
    "head": _cmd("c:n:qvz", "bytes= lines= quiet silent verbose zero-terminated", number=True),
    "tail": _cmd("c:fFn:qs:vz", "bytes= follow=? lines= max-unchanged-stats= pid= quiet retry silent "
                 "sleep-interval= verbose zero-terminated", number=True),
    "wc": _cmd("clLmw", "bytes chars lines max-line-length words total=", "files0-from"),
    "sort": _cmd("bcCdfghik:mMnrRsS:t:uVz",
                 "ignore-leading-blanks check=? dictionary-order ignore-case general-numeric-sort "
                 "human-numeric-sort ignore-nonprinting key= merge month-sort numeric-sort random-sort "
                 "random-source= reverse sort= stable buffer-size= field-separator= unique version-sort "
                 "zero-terminated debug parallel= batch-size=",
                 "compress-program output temporary-directory files0-from", reads="random-source"),
    "uniq": _cmd("cdDf:is:uw:z", "count repeated all-repeated=? skip-fields= ignore-case skip-chars= unique "
                 "zero-terminated check-chars= group=?", max_paths=1, number=True),
    "cut": _cmd("b:c:d:f:nsz", "bytes= characters= delimiter= fields= complement only-delimited "
                "output-delimiter= zero-terminated"),
    "tr": _cmd("cCdst", "complement delete squeeze-repeats truncate-set1", operands="none"),
    "nl": _cmd("b:d:f:h:i:l:n:ps:v:w:", "body-numbering= section-delimiter= footer-numbering= header-numbering= "
               "line-increment= join-blank-lines= number-format= no-renumber number-separator= "
               "starting-line-number= number-width="),
    "od": _cmd("A:aBbcDdeFfHhIij:LlN:OoS:st:vw::Xx", "address-radix= endian= format= output-duplicates "
               "read-bytes= skip-bytes= strings=? traditional width=?"),
    "hexdump": _cmd("bcCde:f:L::n:os:vx", "one-byte-octal one-byte-char canonical two-bytes-decimal "
                    "two-bytes-octal two-bytes-hex format= format-file= color=? length= skip= no-squeezing",
                    reads="f format-file"),
    # (xxd reads options by their first letter: readonly.judge_xxd)
    "base64": _cmd("diw:", "decode ignore-garbage wrap=", max_paths=1),
    "tac": _cmd("brs:", "before regex separator="),
    "rev": _cmd(""),
    "strings": _cmd("adfn:o:t:e:T:ws:U:", "all data print-file-name bytes= radix= encoding= target= "
                    "include-all-whitespace output-separator= unicode="),
    "paste": _cmd("d:sz", "delimiters= serial zero-terminated"),
    "fold": _cmd("bsw:", "bytes spaces width="),
    "expand": _cmd("it:", "initial tabs=", number=True),
    "column": _cmd("c:deJl:L:n:N:o:O:R:r:s:tT:W:x", "columns= table-empty-lines json keep-empty-lines table "
                   "table-columns= table-columns-limit= table-name= table-order= table-right= table-truncate= "
                   "table-wrap= table-hide= table-noextreme= table-noheadings table-header-repeat tree= tree-id= "
                   "tree-parent= output-separator= separator= output-width= fillrows"),
    "comm": _cmd("123z", "check-order nocheck-order output-delimiter= total zero-terminated"),
    "cmp": _cmd("bi:ln:sv", "print-bytes ignore-initial= verbose bytes= quiet silent"),
    # Not -r (follows links inside folders), -l (runs pr), --from-file/--to-file.
    "diff": _cmd("abBcC:dD:eEfF:hiI:nNpqsS:tTuU:vwWx:X:y",
                 "brief color=? context=? ed exclude= exclude-from= expand-tabs horizon-lines= ifdef= "
                 "ignore-all-space ignore-blank-lines ignore-case ignore-file-name-case ignore-matching-lines= "
                 "ignore-space-change ignore-tab-expansion ignore-trailing-space initial-tab label= left-column "
                 "line-format= old-line-format= new-line-format= unchanged-line-format= old-group-format= "
                 "new-group-format= changed-group-format= unchanged-group-format= minimal new-file no-dereference "
                 "no-ignore-file-name-case normal palette= rcs report-identical-files show-c-function "
                 "show-function-line= side-by-side speed-large-files strip-trailing-cr suppress-blank-empty "
                 "suppress-common-lines tabsize= text unidirectional-new-file unified=? width=",
                 "recursive paginate from-file to-file starting-file", reads="X exclude-from", number=True),
    "grep": _GREP, "egrep": _GREP, "fgrep": _GREP, "rg": _RG,
    "ls": _cmd("aAbBcCdfFgGhHiI:klmnNopqQrRsStT:uUvw:xXZ1",
               "all almost-all author escape block-size= ignore-backups color=? directory dired classify=? "
               "file-type format= full-time group-directories-first no-group human-readable si "
               "dereference-command-line dereference-command-line-symlink-to-dir hide= hyperlink=? "
               "indicator-style= inode ignore= kibibytes literal numeric-uid-gid hide-control-chars "
               "show-control-chars quote-name quoting-style= reverse recursive size sort= time=? time-style= "
               "tabsize= width= context zero", "dereference", recurse="R recursive", default="."),
    "stat": _cmd("c:fLt", "dereference file-system format= printf= terse cached="),
    "du": _cmd("0aB:bcDd:HhklmPSst:xX:", "null all apparent-size block-size= bytes total dereference-args "
               "max-depth= human-readable inodes kilobytes si count-links no-dereference separate-dirs summarize "
               "threshold= time=? time-style= one-file-system exclude= exclude-from=",
               "dereference files0-from", reads="X exclude-from", tree=True, default="."),
    "df": _cmd("aB:hHiklmPTt:vx:", "all block-size= human-readable si inodes local no-sync sync output=? "
               "portability print-type total type= exclude-type=", operands="none"),
    # tree reads no abbreviations; not -l (follows links), -o, -R/-H (write files), --fromfile.
    "tree": _cmd("adfxL:P:I:qNQpugshDFvtcUrACSnXJiT:",
                 "gitignore ignore-case matchdirs metafirst prune info noreport charset= filelimit= si du "
                 "timefmt= inodes device dirsfirst filesfirst sort=", tree=True, default=".", prefixes=False),
    "file": _cmd("bcdEe:F:hikLlm:NnP:rsv0",
                 "brief checking-printout debug extension exclude= exclude-quiet= mime mime-type mime-encoding "
                 "keep-going list dereference no-dereference no-buffer no-pad print0 raw special-files "
                 "separator= magic-file= parameter= apple",
                 "compile files-from uncompress uncompress-noreport preserve-date no-sandbox", reads="m magic-file"),
    "realpath": _cmd("eLmPqsz", "canonicalize-existing canonicalize-missing logical physical quiet "
                     "relative-base= relative-to= strip no-symlinks zero"),
    "readlink": _cmd("efmnqsvz", "canonicalize canonicalize-existing canonicalize-missing no-newline quiet "
                     "silent verbose zero"),
    "basename": _cmd("as:z", "multiple suffix= zero", operands="none"),
    "dirname": _cmd("z", "zero", operands="none"),
    "md5sum": _SUMS, "sha1sum": _SUMS, "sha224sum": _SUMS, "sha256sum": _SUMS, "sha384sum": _SUMS,
    "sha512sum": _SUMS, "b2sum": _SUMS,
    "seq": _cmd("f:s:w", "format= separator= equal-width", operands="none", number=True),
    "sleep": _cmd("", operands="none"),
    "pwd": _cmd("LP", operands="none"),
    "which": _cmd("as", operands="none"),
    "type": _cmd("afptP", operands="none", prefixes=False),
    "whoami": _cmd("", operands="nothing"),
    "id": _cmd("agGnruzZ", "context group groups name real user zero", operands="none"),
    "date": _cmd("d:f:I::r:Ru", "date= file= iso-8601=? resolution rfc-email rfc-3339= reference= utc universal "
                 "debug", "set", operands="format", reads="f file r reference"),
    "uname": _cmd("asnrvmpio", "all kernel-name nodename kernel-release kernel-version machine processor "
                  "hardware-platform operating-system", operands="none"),
    "hostname": _cmd("aAdfiIsy", "alias all-fqdns domain fqdn long ip-address all-ip-addresses short yp nis",
                     "file boot", operands="nothing"),  # an operand sets the name
    "printenv": _cmd("0", "null", operands="none"),
    "nproc": _cmd("", "all ignore=", operands="none"),
    "free": _cmd("bkmgltwhs:c:v", "bytes kilo mega giga tera peta kibi mebi gibi tebi pebi human si lohi total "
                 "committed seconds= count= wide", operands="none"),
    "uptime": _cmd("ps", "pretty since", operands="none"),
    "arch": _cmd("", operands="none"),
    "tty": _cmd("s", "silent quiet", operands="none"),
    "locale": _cmd("akmvc", "all-locales charmaps category-name keyword-name verbose usage", operands="none"),
    "dirs": _cmd("clpv", operands="none", number=True),
    "jq": _cmd("acCefjL:MnrRsS", "arg=2 argjson=2 slurpfile=2 rawfile=2 indent= tab seq stream slurp raw-input "
               "null-input compact-output color-output monochrome-output ascii-output sort-keys raw-output "
               "join-output exit-status unbuffered from-file", operands="pattern", reads="L slurpfile rawfile",
               pattern="f from-file", prefixes=False),
}
