"""chakra-synth: synthesizers that learn from Chakra ET sets and generate new ones (docs/synth.md)."""
