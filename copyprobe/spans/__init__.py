"""Span index: every long verbatim span of a text found in a user's corpora.

A core package (it knows no study): a corpus (any CORPUS-schema Parquet, JSONL or a folder of
text files) is cut into contiguous shards, each indexed byte-level with the ``infini-gram``
package's suffix arrays; :class:`~copyprobe.spans.index.SpanIndex` opens the shards (after
validating every file itself: the 2.6.0 engine's asserts are compiled out) and answers
:meth:`count` and :meth:`find_spans`.  The studies build attribution tables and the guard its
output-side check on it.

Modules, one concern each:

* :mod:`~copyprobe.spans.types`: :class:`Span`, :class:`DocHit`, :class:`Tokens`, the
  :class:`SpanLookup` protocol every index implements;
* :mod:`~copyprobe.spans.encoding`: the indexed unit (``words`` or ``whitespace``; each
  character of Chinese, Japanese, Thai... a word), tokens with character offsets, the byte
  encoding of a document and of a query;
* :mod:`~copyprobe.spans.tokenizer`, :mod:`~copyprobe.spans.units`: the unit ``tokens`` (a
  model's token ids from a local GGUF or tokenizer.json, stored as infini-gram u16/u32) and
  the codec of each unit (how it is stored, sliced and searched);
* :mod:`~copyprobe.spans.corpus`: reading corpora (Parquet, JSONL, a folder) as documents;
* :mod:`~copyprobe.spans.build`: writing the shards and the manifest, the suffix arrays;
* :mod:`~copyprobe.spans.index`: opening an index as a snapshot, validating it, counts,
  occurrences;
* :mod:`~copyprobe.spans.checksums`: the block CRC-32s and sha256 of an index's files;
* :mod:`~copyprobe.spans.find`: the maximal spans of at least L words (the exact algorithm);
* :mod:`~copyprobe.spans.stream`: incremental words and the window matcher (the streaming
  output guard);
* :mod:`~copyprobe.spans.reference`: a brute-force in-memory index, the tests' oracle;
* :mod:`~copyprobe.spans.cli`: ``copyprobe index build``, ``find`` and ``verify``.

The workflow's side (rules/spans.smk) and attribution:

* :mod:`~copyprobe.spans.config`: the config block ``spans.indexes`` (corpora, unit, shards);
* :mod:`~copyprobe.spans.paths`, :mod:`~copyprobe.spans.inputs`: where an index lies, the
  rules' input and resource functions;
* :mod:`~copyprobe.spans.workflow`: the build steps as jobs, suffix arrays reused by content;
* :mod:`~copyprobe.spans.attribution`: every generation's spans in an index (the SPANS and
  ATTRIBUTION tables the studies join with their own).
"""
