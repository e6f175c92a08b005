// Tests for DCServe.
