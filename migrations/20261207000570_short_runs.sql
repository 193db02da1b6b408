-- The short runs submitted inside the fair-share window, whose offered load sizes the idle GPUs
-- each pool keeps for them (docs/design.md section 3.7): read once a minute by the live pass.
CREATE INDEX runs_short ON runs (submitted_at) WHERE time_limit_s <= 900;
