"""The Counters tab: the bank counters, staff strategies, the compare.
Domain: ``lanemon.counters``."""
