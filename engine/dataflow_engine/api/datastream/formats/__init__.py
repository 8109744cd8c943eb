"""``pyflink.datastream.formats`` for this engine: PyFlink's record formats, refused, as
connectors here take a format's name (``raw``, ``text``, ``json``) instead."""
