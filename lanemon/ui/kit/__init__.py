"""The drawing kit: theme (every colour and font), live text, cached cell
text, Qt-painted chart items, table helpers. No domain knowledge here."""
