"""distal.model: predicting the time of a plan on a machine model."""
