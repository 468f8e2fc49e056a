"""The machine a run is on: its devices, driver, Keras backends, energy meters, timing, peak
rates and pinned versions."""
