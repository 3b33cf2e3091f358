"""A talk script in the window (``lanemon.talk`` reads it): ``player`` (keys, steps,
actions through the views' public methods), ``caption`` (the caption over the chart,
the blank screen)."""
