-- How many of a run's GPUs its capacity contract covers (a gang larger than what the contract
-- had left when it started is on it in part: docs/design.md section 3.3). NULL: all of them.
ALTER TABLE runs ADD COLUMN contract_gpus INTEGER CHECK (contract_gpus > 0);
