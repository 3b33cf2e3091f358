"""The Programs tab: asyncio programs heard through ``lanemon.probe`` (``view``), and where a
stall's time went (``where``, Qt-free)."""
