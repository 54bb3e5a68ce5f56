"""SQL text handling for the warehouse emulator: a lexer, name encoding, and helpers.

Unity Catalog has three-level names (catalog.schema.table); Spark's session catalog has
two (database.table) and refuses some characters (a backtick) in database names. So every
UC object gets a Spark-side name that is plain [a-z0-9_]:

    enc(s)        each char of s.lower() in [a-z0-9] is kept; any other char becomes
                  '_<hex code point>_'  (so '_' -> '_5f_', 'ü' -> '_fc_', '`' -> '_60_')
    database      'uc0' + enc(catalog) + '__' + enc(schema)
    table         enc(table)

'__' never occurs inside enc() output except between two escapes ('_5f__5f_'), where the
parser reads whole escapes first, so the mapping is reversible (see dec/db_parts).
Names that start with '__' (e.g. the UNDROP trash '__dropped_N') can't come from enc().
"""
import re

_KEEP = set("abcdefghijklmnopqrstuvwxyz0123456789")


def enc(s):
    return "".join(c if c in _KEEP else "_%x_" % ord(c) for c in s.lower())


_ATOM = r"(?:[a-z0-9]|_[0-9a-f]+_)"
ENC_RE = _ATOM + "+"
_ATOM_RE = re.compile(r"_([0-9a-f]+)_|([a-z0-9])")


def dec(e):
    out = []
    for m in _ATOM_RE.finditer(e):
        out.append(chr(int(m.group(1), 16)) if m.group(1) else m.group(2))
    return "".join(out)


def db_name(cat, sch):
    return "uc0" + enc(cat) + "__" + enc(sch)


_DB_RE = re.compile(r"^uc0(" + ENC_RE + ")__(" + ENC_RE + ")$")


def db_parts(db):
    """Spark database name -> (catalog, schema), or None for databases that are not ours."""
    m = _DB_RE.match(db)
    if not m:
        return None
    return dec(m.group(1)), dec(m.group(2))


def quote(name):
    return "`" + name.replace("`", "``") + "`"


def spark_table(cat, sch, tbl):
    return quote(db_name(cat, sch)) + "." + quote(enc(tbl))


def uc_quoted(*parts):
    return ".".join(quote(p) for p in parts)


# Spark-side names appearing in Spark's messages / result strings, back to UC names.
_SPARK_NAME_RE = re.compile(
    r"(`?)(?:spark_catalog`?\.`?)?uc0(" + ENC_RE + ")__(" + ENC_RE + r")`?(?:\.`?(" + ENC_RE + r")`?)?")


def unspark(text):
    if not isinstance(text, str) or "uc0" not in text:
        return text

    def rep(m):
        parts = [dec(m.group(2)), dec(m.group(3))]
        if m.group(4):
            parts.append(dec(m.group(4)))
        if m.group(1):
            return uc_quoted(*parts)
        return ".".join(parts)
    return _SPARK_NAME_RE.sub(rep, text)


# ---------------------------------------------------------------------------- lexer
class Tok:
    __slots__ = ("kind", "text", "value")

    def __init__(self, kind, text, value=None):
        self.kind = kind      # ws comment str ident qident num op param
        self.text = text
        self.value = text if value is None else value

    @property
    def up(self):
        return self.text.upper() if self.kind == "ident" else None

    def __repr__(self):
        return "Tok(%s,%r)" % (self.kind, self.text)


class SqlSyntaxError(Exception):
    pass


_ESC = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "0": "\0", "Z": "\x1a", "%": "\\%", "_": "\\_"}


def _unescape(body):
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            n = body[i + 1]
            if n == "u" and re.match(r"[0-9a-fA-F]{4}", body[i + 2:i + 6]):
                out.append(chr(int(body[i + 2:i + 6], 16)))
                i += 6
                continue
            if n == "U" and re.match(r"[0-9a-fA-F]{8}", body[i + 2:i + 10]):
                out.append(chr(int(body[i + 2:i + 10], 16)))
                i += 10
                continue
            out.append(_ESC.get(n, n))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def lex(sql):
    toks, i, n = [], 0, len(sql)
    while i < n:
        c = sql[i]
        if c.isspace():
            j = i
            while j < n and sql[j].isspace():
                j += 1
            toks.append(Tok("ws", sql[i:j]))
            i = j
        elif sql.startswith("--", i):
            j = sql.find("\n", i)
            j = n if j < 0 else j
            toks.append(Tok("comment", sql[i:j]))
            i = j
        elif sql.startswith("/*", i):
            j = sql.find("*/", i + 2)
            if j < 0:
                raise SqlSyntaxError("unclosed comment")
            toks.append(Tok("comment", sql[i:j + 2]))
            i = j + 2
        elif c in "'\"":
            # Spark 4 reads a doubled quote inside a literal as one quote ('it''s').
            j, chunks, start = i + 1, [], i + 1
            while True:
                while j < n and sql[j] != c:
                    j += 2 if sql[j] == "\\" else 1
                if j >= n:
                    raise SqlSyntaxError("unclosed string literal")
                if j + 1 < n and sql[j + 1] == c:
                    chunks.append(_unescape(sql[start:j]) + c)
                    j += 2
                    start = j
                    continue
                break
            chunks.append(_unescape(sql[start:j]))
            toks.append(Tok("str", sql[i:j + 1], "".join(chunks)))
            i = j + 1
        elif c == "`":
            j, buf = i + 1, []
            while True:
                if j >= n:
                    raise SqlSyntaxError("unclosed backquoted identifier")
                if sql[j] == "`":
                    if j + 1 < n and sql[j + 1] == "`":
                        buf.append("`")
                        j += 2
                        continue
                    break
                buf.append(sql[j])
                j += 1
            toks.append(Tok("qident", sql[i:j + 1], "".join(buf)))
            i = j + 1
        elif c.isalpha() or c == "_":
            j = i
            while j < n and (sql[j].isalnum() or sql[j] == "_"):
                j += 1
            toks.append(Tok("ident", sql[i:j]))
            i = j
        elif c.isdigit():
            j = i
            while j < n and (sql[j].isalnum() or sql[j] == "."):
                j += 1
            toks.append(Tok("num", sql[i:j]))
            i = j
        elif c == ":" and i + 1 < n and (sql[i + 1].isalpha() or sql[i + 1] == "_") and \
                not (i > 0 and sql[i - 1] in ":"):
            j = i + 1
            while j < n and (sql[j].isalnum() or sql[j] == "_"):
                j += 1
            # `col:field` (JSON path) vs a parameter marker: ':' right after an identifier
            # (no space) is the JSON path operator unless that identifier is a keyword.
            if toks and toks[-1].kind in ("ident", "qident") and toks[-1].up not in _KW_BEFORE_PARAM:
                toks.append(Tok("op", ":"))
                i += 1
            else:
                toks.append(Tok("param", sql[i:j], sql[i + 1:j]))
                i = j
        else:
            for op in ("::", "<=>", "<=", ">=", "<>", "!=", "||", "=>", "->"):
                if sql.startswith(op, i):
                    toks.append(Tok("op", op))
                    i += len(op)
                    break
            else:
                toks.append(Tok("op", c))
                i += 1
    return toks


_KW_BEFORE_PARAM = {"SELECT", "WHERE", "AND", "OR", "NOT", "IS", "IN", "LIKE", "BY", "THEN", "ELSE",
                    "WHEN", "LIMIT", "OFFSET", "AS", "ON", "VALUES", "SET", "COMMENT", "HAVING",
                    "RETURN", "TO", "FROM", "OF", "IDENTIFIER", "CASE", "BETWEEN", "INTERVAL"}


def render(toks):
    return "".join(t.text for t in toks)


def sig(toks):
    """Significant tokens (no whitespace/comments)."""
    return [t for t in toks if t.kind not in ("ws", "comment")]


def split_statements(sql):
    """Split on top-level ';' (the API runs one statement; a trailing ';' is dropped)."""
    toks = lex(sql)
    parts, cur = [], []
    for t in toks:
        if t.kind == "op" and t.text == ";":
            parts.append(cur)
            cur = []
        else:
            cur.append(t)
    parts.append(cur)
    return [p for p in parts if sig(p)]


def sql_string(v):
    """A Spark SQL string literal for v (backslash escaping, as Spark reads it)."""
    return "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'"


class Cursor:
    """Walks the significant tokens of one statement for the intercepted (UC-only) grammars."""

    def __init__(self, toks):
        self.t = sig(toks)
        self.i = 0

    def peek(self, k=0):
        j = self.i + k
        return self.t[j] if j < len(self.t) else None

    def at_kw(self, *words):
        for k, w in enumerate(words):
            t = self.peek(k)
            if t is None or t.up != w:
                return False
        return True

    def kw(self, *words):
        if self.at_kw(*words):
            self.i += len(words)
            return True
        return False

    def expect_kw(self, *words):
        if not self.kw(*words):
            raise SqlSyntaxError("expected %s near %r" % (" ".join(words), self.rest_text()[:40]))

    def op(self, o):
        t = self.peek()
        if t is not None and t.kind == "op" and t.text == o:
            self.i += 1
            return True
        return False

    def expect_op(self, o):
        if not self.op(o):
            raise SqlSyntaxError("expected '%s' near %r" % (o, self.rest_text()[:40]))

    def ident(self):
        t = self.peek()
        if t is None or t.kind not in ("ident", "qident"):
            raise SqlSyntaxError("expected an identifier near %r" % self.rest_text()[:40])
        self.i += 1
        return t.value

    def name(self):
        """A multi-part name, or IDENTIFIER('a.b.c')."""
        t = self.peek()
        if t is not None and t.up == "IDENTIFIER" and self.peek(1) is not None and self.peek(1).text == "(":
            self.i += 2
            s = self.string()
            self.expect_op(")")
            return parse_multipart(s)
        parts = [self.ident()]
        while self.op("."):
            parts.append(self.ident())
        return parts

    def string(self):
        t = self.peek()
        if t is None or t.kind != "str":
            raise SqlSyntaxError("expected a string literal near %r" % self.rest_text()[:40])
        v = t.value
        self.i += 1
        while self.peek() is not None and self.peek().kind == "str":   # 'a' 'b' concatenates
            v += self.peek().value
            self.i += 1
        return v

    def ident_list(self):
        self.expect_op("(")
        out = [self.ident()]
        while self.op(","):
            out.append(self.ident())
        self.expect_op(")")
        return out

    def done(self):
        return self.i >= len(self.t)

    def expect_end(self):
        if not self.done():
            raise SqlSyntaxError("unexpected %r" % self.rest_text()[:40])

    def rest_text(self):
        return " ".join(t.text for t in self.t[self.i:])


def parse_multipart(s):
    """'a.`b.c`.d' -> ['a', 'b.c', 'd'] (the IDENTIFIER clause's string form)."""
    toks = sig(lex(s))
    parts, expect_name = [], True
    for t in toks:
        if expect_name and t.kind in ("ident", "qident"):
            parts.append(t.value)
            expect_name = False
        elif not expect_name and t.kind == "op" and t.text == ".":
            expect_name = True
        else:
            raise SqlSyntaxError("invalid identifier %r" % s)
    if expect_name:
        raise SqlSyntaxError("invalid identifier %r" % s)
    return parts
