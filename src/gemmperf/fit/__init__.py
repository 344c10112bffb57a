"""Fit model parameters from measurements."""
