"""The Lanes & queues tab: workspace lanes shared by two queues, the
timeline, the invariant checker. Domain: ``lanemon.lanes``."""
