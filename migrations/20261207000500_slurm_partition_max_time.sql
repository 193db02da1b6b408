-- The Slurm partition's MaxTime, in seconds (NULL: unlimited, or not a Slurm cluster), read
-- by `tranche admin add-slurm-cluster`: a run asking for a longer time limit is refused at
-- submission instead of being placed (and making room by preemption) for a job Slurm refuses.
ALTER TABLE clusters ADD COLUMN slurm_max_time_s BIGINT;
