"""Criterion types: one module each, holding the type's model, its check and nothing else.

=================  ===========================================================
``model``          what every criterion has (id, weight, axis...), the field
                   annotations types share, :class:`FieldError`
``check``          the answer side: :class:`Answer`, :class:`Check` and the
                   outcomes a check returns
``phrases``        phrase matching at word and number bounds (any_of, all_of,
                   forbidden, metric)
``any_of`` ...     one deterministic type per module: its model and its check
``registry``       the deterministic types, one line each, and the tagged
                   union pydantic reads a criterion (or a json field's body) by
``json``           ``json``: parses, fits any JSON Schema, checks fields at
                   JSON Pointers with deterministic bodies (above the registry)
``json_text``      JSON read out of an answer (fenced or bare), JSON Pointers
``normalize``      the text normalization every phrase and pattern match uses
``judge``          ``judge``: a requirement the LLM judge grades (model only)
``extract``        ``extract``: the judge reads a value, a deterministic body
                   decides (above the registry, like ``json``)
=================  ===========================================================

Nothing is imported here: a session without rubrics imports none of this, and
the models load pydantic, the checks RE2 and rapidfuzz only where they need them.
"""
