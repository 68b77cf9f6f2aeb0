"""The fault cases of docs/faults.md: each bad input or fault a user meets, the test that tries it, and the page.

``CASES`` lists them in the page's order: the fault, how it is tried, what should happen, and the test of
``tests/test_faults.py`` that runs it as a user would (a command line in a subprocess, on the tiny config or a
one-epoch MBCE model of the embedded bibtex; the reader that ``main`` uses where the fault is in a file) and asserts
its exit status and message; ``also``: tests elsewhere that assert the same behaviour of the library, in-process.
A test records what each of its cases showed through the ``fault`` fixture (tests/conftest.py)::

  code, _, err = run(...)
  with fault('workdir_is_a_file', code, err):
    assert ...  # the case is "as it should be" when this block passes

and ``pytest -m e2e tests/test_faults.py --faults-page=docs/faults.md`` writes the table from those records:

* exit: the command's exit status (empty for a library call);
* stderr: the lines a user reads (the first two; the scratch folder shown as ``$TMP``, this checkout as ``$REPO``);
* as it should be: "yes" when the case's assertions passed, "**no**" when they failed, "**not run**" when its
  test did not run (deselected, skipped, or a failure before it).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import datetime
import os
import re
import shlex
import time
from pathlib import Path


@dataclasses.dataclass(frozen=True)
class Case:
  key: str  # the name a test records it by
  fault: str
  how: str  # how it is tried; ``{name}`` fields are filled from what the test passes (``fault(key, ..., name=v)``)
  should: str  # what should happen
  test: str  # the test function of tests/test_faults.py that runs and checks it
  also: tuple[str, ...] = ()  # 'tests/<file>.py::<test>' asserting the same behaviour in-process


C = Case
_MAIN_CUSTOM = '`main --config=configs/custom.py`'
_NAME_FIELD_NOTHING_WRITTEN = 'one line naming the field; nothing written'
_PLUGIN_REFUSED = 'one line naming the plug-in, the cause and the fix, before training; nothing written'
_DISAGREE = 'both stop before training, each with one line naming what differs; nothing written'
_PREDICT = 'tests/test_predict.py::'
_ARFF = 'tests/test_arff.py::'
_PLUGINS = 'tests/test_plugins.py::'
_MULTIHOST = 'tests/test_multihost.py::'
_TUNE = 'tests/test_tune.py::'
_TUNE_RANDOM = 'test_a_tune_under_ctrl_c_at_random_moments_exits_130_and_its_rerun_ends_as_an_undisturbed_tune'
_TUNE_CTRL_C = 'test_ctrl_c_during_a_tunes_trial_is_one_line_and_the_same_command_resumes'
_IN_COMPILE = 'tests/test_interrupts.py::test_ctrl_c_during_an_xla_compile_is_raised_once_the_compile_has_ended'

CASES = [
    # --- the workdir --------------------------------------------------------------------------------------------
    C('second_trainer', 'two trainers on one workdir', 'second `main` on a workdir in training',
      'refused in one line naming the holder', 'test_second_trainer_is_refused_and_readers_do_not_disturb_the_first'),
    C('readers_beside_a_trainer', '`evaluate` in a loop beside a live training',
      '`evaluate` read it {reads} times while it trained (evaluate.evaluate_run in the test\'s process)',
      'training completes; metrics.json and metrics.jsonl equal an undisturbed run\'s',
      'test_second_trainer_is_refused_and_readers_do_not_disturb_the_first'),
    C('workdir_is_a_file', '`--workdir` names an existing file', '`main`', 'one line',
      'test_command_lines_end_bad_input_in_one_line'),
    C('workdir_cannot_be_made', 'workdir cannot be created', '`main --workdir=<file>/sub`', 'one line',
      'test_command_lines_end_bad_input_in_one_line'),
    C('read_only_workdir', 'read-only workdir', '`main`{as_root}', 'one line (root: trains)',
      'test_a_read_only_workdir_is_named_or_written_by_root'),
    C('full_disk', 'full disk', '`main`, checkpoint saves raising ENOSPC', 'one line',
      'test_command_lines_end_bad_input_in_one_line'),
    C('failed_start', 'a failed start, then the corrected command',
      '`main --config.num_devices=5` on 1 device, then without',
      'one line; nothing written; the corrected command runs',
      'test_a_failed_start_writes_nothing_and_leaves_no_record_in_the_way'),
    C('stale_record', 'a config record left by a start that saved no checkpoint', '`main` with another config',
      'replaced with a notice, the run trains', 'test_a_failed_start_writes_nothing_and_leaves_no_record_in_the_way'),
    C('resume_other_config', 'resume with a different config', '`main --config.seed=3` on a finished run',
      'refused, naming the field', 'test_resuming_with_another_config_is_refused_naming_the_field',
      ('tests/test_resume.py::test_resume_with_a_different_config_is_refused',)),
    C('resume_fewer_epochs', 'resume a finished run with fewer epochs',
      '`main --config.num_epochs=1` on a 2-epoch run', 'refused; metrics.json untouched',
      'test_a_shorter_resume_is_refused_and_keeps_the_record'),
    # --- data changed under a run; files a new user trains on ---------------------------------------------------
    C('data_changed', 'data file changed at the same path, then resume', '`main` again after one value changed',
      'refused, naming the file', 'test_resuming_on_changed_data_is_refused_naming_the_files'),
    C('predict_after_file_changed', '`predict` after the training file changed (one feature scaled by 3)',
      '`predict --scores --data_dir=DIR` on 10 rows',
      'the scores made with the run\'s recorded standardisation statistics, not refitted on today\'s file',
      'test_a_training_file_changed_after_the_run',
      (f'{_PREDICT}test_predict_applies_the_runs_own_standardisation_after_the_training_file_changed',)),
    C('evaluate_after_rows_shuffled',
      '`evaluate` after the training file\'s rows were shuffled (custom file split 60/20/20)',
      '`evaluate --data_dir=DIR --split=all`',
      'refused in one line naming the splits that differ and the file; the run\'s own data evaluates',
      'test_a_training_file_changed_after_the_run',
      (f'{_PREDICT}test_evaluate_refuses_data_that_differs_from_the_runs',)),
    C('label_never_positive', 'a label column that is always 0',
      '`evaluate --split=all` on a custom dataset whose label l2 is never 1', 'a warning per split naming the label',
      'test_evaluate_warns_of_labels_never_positive_in_a_split'),
    C('mulan_medical', 'MULAN medical layout: `-C 45` in @relation, the XML naming the last 45 (here 3)',
      '`main --config=configs/custom.py` with the ARFF and XML',
      'trains on the XML\'s labels, with a warning naming both', 'test_mulan_medical_layout_trains_on_the_xmls_labels',
      (f'{_ARFF}test_an_xml_disagreeing_with_the_meka_header_decides_with_a_warning',)),
    C('arff_features_only', 'ARFF with features only, to train on', _MAIN_CUSTOM,
      'one line saying what to do; nothing written', 'test_a_file_that_cannot_be_trained_on_is_one_line_naming_it',
      (f'{_ARFF}test_a_file_without_label_columns_says_how_to_name_them',)),
    C('arff_no_rows', 'ARFF with no rows, to train on', _MAIN_CUSTOM, 'one line saying what to do; nothing written',
      'test_a_file_that_cannot_be_trained_on_is_one_line_naming_it'),
    C('arff_one_row', 'ARFF with one row, to train on', _MAIN_CUSTOM, 'one line saying what to do; nothing written',
      'test_a_file_that_cannot_be_trained_on_is_one_line_naming_it',
      ('tests/test_mlc_data.py::test_a_file_too_small_for_its_splits_is_refused_before_the_run_writes',)),
    C('empty_tagging_split', 'empty tagging split', '`main` on Twitter POS with an empty dev file',
      'one line naming the file', 'test_a_file_that_cannot_be_trained_on_is_one_line_naming_it',
      ('tests/test_tagging_predict.py::test_an_empty_split_is_named_by_its_file',)),
    C('glove_nan', 'GloVe file holding NaN', '`main` on Twitter POS with model.embeddings_path',
      'one line naming the file, line and word, at load', 'test_a_file_that_cannot_be_trained_on_is_one_line_naming_it',
      ('tests/test_tagging_embeddings.py::test_non_finite_vectors_are_named_at_load',)),
    C('cora_ref_unclosed', 'Cora reference missing </ref>', '`main --config=configs/cora.py`',
      'one line naming the file and line', 'test_a_file_that_cannot_be_trained_on_is_one_line_naming_it',
      ('tests/test_citations.py::test_malformed_references_name_the_file_and_line',)),
    # --- divergence ---------------------------------------------------------------------------------------------
    C('adam_1e3', 'Adam at learning rate 1e3', '`main`', 'stops: quantity, step, last good checkpoint; exit 1',
      'test_a_diverging_run_stops_naming_quantity_step_and_checkpoint'),
    C('neumann_alpha_2', 'Neumann with alpha 2', '`main`', 'stops: quantity, step, last good checkpoint; exit 1',
      'test_a_diverging_run_stops_naming_quantity_step_and_checkpoint'),
    C('nan_loss', 'NaN loss (divergence checks off)', '`main`, inner SGD at 1e3',
      'stops: quantity, step, last good checkpoint', 'test_a_diverging_run_stops_naming_quantity_step_and_checkpoint'),
    # --- damage -------------------------------------------------------------------------------------------------
    C('torn_metrics', 'half-written last line in metrics.jsonl', '`main --config.num_epochs=3` (resume)',
      'warning; the run resumes', 'test_a_torn_last_metrics_line_is_dropped_with_a_warning'),
    C('checkpoint_emptied', 'latest checkpoint\'s files emptied', '`main --config.num_epochs=3` (resume)',
      'warning naming it; moved aside; resumes from the previous one',
      'test_a_damaged_latest_checkpoint_falls_back_to_the_previous_one'),
    C('best_emptied', 'latest best-on-dev parameters emptied', '`evaluate`',
      'warning naming them; scores the previous best',
      'test_a_damaged_latest_checkpoint_falls_back_to_the_previous_one'),
    C('config_cut_short', 'config.json cut short', '`evaluate`', 'one line naming the file',
      'test_a_config_record_cut_short_is_one_line_naming_it'),
    # --- command lines ------------------------------------------------------------------------------------------
    C('misspelt_override', 'misspelt config override', '`main --config.optimzer.learning_rate=1`',
      'one line with the suggestion; exit 2', 'test_command_lines_end_bad_input_in_one_line'),
    C('config_missing', 'config file that does not exist', '`main --config=configs/nope.py`', 'one line; exit 2',
      'test_command_lines_end_bad_input_in_one_line'),
    C('unknown_method', 'unknown config value', '`main --config.method=implicitt`', 'one line naming the field',
      'test_command_lines_end_bad_input_in_one_line'),
    C('evaluate_no_checkpoint', '`evaluate` on a workdir with no checkpoint', '`evaluate`', 'one line',
      'test_command_lines_end_bad_input_in_one_line'),
    C('predict_no_checkpoint', '`predict` on a workdir with no checkpoint', '`predict`', 'one line',
      'test_command_lines_end_bad_input_in_one_line'),
    C('output_folder_missing', '`predict --output` into a missing folder', '`predict`', 'one line, before any work',
      'test_command_lines_end_bad_input_in_one_line'),
    # --- command lines and workdirs that once ended in a traceback or lost the user's files ---------------------
    C('misspelt_nested', 'misspelt nested config override', '`main --config.optimizer.learning_rat=1`',
      'one line naming the field; exit 2', 'test_a_misspelt_nested_override_and_a_broken_config_file_are_one_line'),
    *[C(key, f'config file with {what}', '`main --config=FILE`', 'one line naming the file; exit 2',
        'test_a_misspelt_nested_override_and_a_broken_config_file_are_one_line')
      for key, what in (('config_syntax', 'a syntax error'), ('config_no_get', 'no get_config()'),
                        ('config_raises', 'get_config() raising'), ('config_dict', 'get_config() returning a dict'),
                        ('config_typo', 'a misspelt field (c.optimizer.learning_rat = 0.5)'),
                        ('config_unknown_field', 'an unknown field (c.no_such_field = 3)'))],
    C('config_raises_relative', 'config file given by a relative path, its get_config() raising',
      '`main --config=cfg/FILE` from the folder above it', 'one line naming the file and line; exit 2',
      'test_a_misspelt_nested_override_and_a_broken_config_file_are_one_line'),
    C('users_own_records', '`--workdir` holding the user\'s own config.json, metrics.json, data.json', '`main`',
      'refused in one line naming them; nothing written', 'test_a_folder_of_the_users_own_files_is_refused_untouched'),
    C('output_is_input', '`predict --output` equal to `--input`', '`predict`',
      'refused in one line; the input untouched', 'test_predict_refuses_to_write_over_its_input'),
    # --- files given to predict ---------------------------------------------------------------------------------
    C('features_reordered', '`predict` on an ARFF with the features in another order', '`predict`',
      'the same labels as the original order', 'test_predict_reads_a_file_as_the_training_file_was_read',
      (f'{_PREDICT}test_predict_matches_features_by_name',)),
    C('feature_renamed', '`predict` on an ARFF with a renamed feature', '`predict`',
      'one line naming the names that differ', 'test_a_file_predict_cannot_read_is_one_line',
      (f'{_PREDICT}test_predict_matches_features_by_name',)),
    C('npy_inf', '`predict` on a .npy holding Inf', '`predict`', 'one line naming the example and column',
      'test_a_file_predict_cannot_read_is_one_line', (f'{_PREDICT}test_predict_names_a_non_finite_input',)),
    C('labels_unknown', 'labels \'?\' in an ARFF given to `predict`', '`predict`',
      'the labels of the same rows with their gold labels', 'test_predict_reads_a_file_as_the_training_file_was_read',
      (f'{_PREDICT}test_predict_ignores_what_the_label_columns_hold',)),
    C('labels_reversed', '`predict` on an ARFF with the label columns in reversed order', '`predict`',
      'the same label names as the original order (labels matched by name)',
      'test_predict_reads_a_file_as_the_training_file_was_read', (f'{_PREDICT}test_predict_matches_labels_by_name',)),
    C('label_renamed', '`predict` on an ARFF with a renamed label (TAG_apob as TAG_apoB)', '`predict`',
      'one line naming the file and the label', 'test_a_file_predict_cannot_read_is_one_line',
      (f'{_PREDICT}test_predict_matches_labels_by_name',)),
    C('nominal_swapped',
      '`predict` on an ARFF whose nominal values are declared in another order ({1,0} for {0,1})', '`predict`',
      'the same labels as the original file (values matched by value)',
      'test_predict_reads_a_file_as_the_training_file_was_read',
      (f'{_PREDICT}test_predict_reads_nominal_values_by_value',)),
    C('nominal_unknown', '`predict` on an ARFF with a nominal value the run never saw',
      '`predict` (declared {{0,1,2}}, a row holding 2)', 'one line naming the file, line, feature and value',
      'test_a_file_predict_cannot_read_is_one_line', (f'{_PREDICT}test_predict_reads_nominal_values_by_value',)),
    *[C(key, fault, '`predict`', 'one line saying what the file holds', 'test_a_file_predict_cannot_read_is_one_line',
        (f'{_PREDICT}test_predict_names_what_a_npy_or_an_empty_file_holds',))
      for key, fault in (('npy_objects', '`predict` on an object .npy'), ('npy_text', '`predict` on a text .npy'),
                         ('arff_no_rows_to_predict', '`predict` on an ARFF with no rows'))],
    C('tagging_text_and_conll', '`predict` for a tagging run, on raw text and on CoNLL columns',
      '`predict --input=new.txt`, `--input=new.conll`',
      'token<TAB>tag lines, a blank line between sentences; the same for both',
      'test_predict_for_a_tagging_run_reads_text_and_conll_and_names_bad_input',
      ('tests/test_tagging_predict.py::test_predict_tags_conll_and_raw_text_through_the_runs_vocabulary',)),
    C('conll_format_on_text', '`predict --format=conll` on raw text',
      '`predict --input=new.txt --format=conll` (2 sentences, 8 words)',
      'refused in one line naming the line (it tagged the first word of each line)',
      'test_predict_for_a_tagging_run_reads_text_and_conll_and_names_bad_input',
      ('tests/test_tagging_predict.py::test_raw_text_read_as_conll_is_refused_naming_the_line',)),
    C('input_is_a_folder', '`predict` given a folder as --input', '`predict --input=<a folder>`',
      'one line naming it a folder', 'test_predict_for_a_tagging_run_reads_text_and_conll_and_names_bad_input',
      ('tests/test_tagging_predict.py::test_a_folder_as_input_is_named_a_folder',)),
    # --- MULAN files as the library reads them ------------------------------------------------------------------
    C('bom', 'UTF-8 BOM at the start of an ARFF', '`read_mulan`', 'read as without it',
      'test_mulan_files_are_read_as_mulan_reads_them', (f'{_ARFF}test_a_utf8_bom_is_accepted',)),
    C('xml_omits_3', 'label XML omitting 3 of the labels', '`read_mulan`',
      'a warning naming the attributes read as features', 'test_mulan_files_are_read_as_mulan_reads_them',
      (f'{_ARFF}test_an_xml_that_omits_labels_is_warned_about',)),
    C('xml_contradicts_meka', 'label XML contradicting the ARFF\'s -C header', '`read_mulan`',
      'the XML decides (MULAN\'s convention), with a warning naming both',
      'test_mulan_files_are_read_as_mulan_reads_them',
      (f'{_ARFF}test_an_xml_disagreeing_with_the_meka_header_decides_with_a_warning',)),
    C('xml_omits_first', 'label XML omitting the first label', '`read_mulan`',
      'a warning naming the attribute read as a feature', 'test_mulan_files_are_read_as_mulan_reads_them',
      (f'{_ARFF}test_an_xml_omitting_the_first_label_is_warned_about',)),
    # --- horses -------------------------------------------------------------------------------------------------
    *[C(f'masks_{key}', f'horse masks stored {encoding}', '`horses.load` (what `main` reads)',
        'read as the {0, 255} originals', 'test_horse_masks_stored_otherwise_read_as_the_originals',
        ('tests/test_segmentation.py::test_masks_in_other_encodings_and_jpeg_images_read_as_the_originals',))
      for key, encoding in (('0_1', '0/1'), ('red_rgb', 'red on black RGB'), ('0_100', '0/100'))],
    C('horses_jpg', 'horse images saved as .jpg, and a stray file', '`horses.load`',
      'the .jpg images read; the stray file named in a warning', 'test_horse_images_as_jpg_and_a_mask_of_three_values',
      ('tests/test_segmentation.py::test_masks_in_other_encodings_and_jpeg_images_read_as_the_originals',)),
    C('horse_mask_three_values', 'horse mask with three values', '`horses.load`', 'an error naming the file',
      'test_horse_images_as_jpg_and_a_mask_of_three_values',
      ('tests/test_segmentation.py::test_masks_that_cannot_be_read_as_two_values_name_the_file',)),
    # --- holes in a training file -------------------------------------------------------------------------------
    C('inf_feature', 'Inf in the features of a training file', '`main` on a custom dataset',
      'one line naming file, line and attribute',
      'test_inf_or_a_missing_value_in_a_training_file_names_file_line_and_attribute',
      (f'{_ARFF}test_infinite_or_missing_features_name_file_line_and_attribute',)),
    C('missing_feature', 'missing (?) feature in a dataset that does not impute', '`main` on a custom dataset',
      'one line naming file, line and attribute',
      'test_inf_or_a_missing_value_in_a_training_file_names_file_line_and_attribute',
      ('tests/test_mlc_data.py::test_missing_features_without_standardising_name_file_line_and_the_setting',)),
    # --- the engine and the workdir, after training (issue 34) --------------------------------------------------
    C('lock_deleted', '`lock` file deleted while a run trains', 'second `main` on the workdir after `rm DIR/lock`',
      'refused in one line naming the workdir and the holder (the lock is on the folder, not the file)',
      'test_deleting_the_lock_file_does_not_admit_a_second_trainer'),
    C('orbax_full_disk', 'disk full while Orbax writes a checkpoint',
      '`main`, the step-12 save failing with ENOSPC in Orbax\'s worker thread; then the same command',
      'one line: the checkpoint, the cause, the step a rerun resumes from; the rerun resumes',
      'test_a_disk_full_in_orbaxs_writer_is_one_line_and_the_run_resumes_exactly'),
    C('empty_loop_record', 'a checkpoint whose loop record is `{}`', '`main --config.num_epochs=3` (resume)',
      'warning naming it; set aside like a damaged one; resumes from the one before',
      'test_a_checkpoint_whose_loop_record_is_empty_is_set_aside_like_a_damaged_one'),
    C('extension_killed', 'a finished run extended (`num_epochs` raised), killed part way, then `evaluate`',
      '`main --config.num_epochs=6` stopped once it saved a best epoch of its own (KeyboardInterrupt, in-process); '
      '`evaluate` (threshold {used}, the old run\'s {old}, chosen on dev for the parameters read {chosen})',
      'the old metrics.json moved aside when the extension starts; `evaluate` chooses the threshold for the '
      'parameters it reads', 'test_an_extension_killed_part_way_never_pairs_the_old_threshold_with_new_parameters'),
    C('grown_cora', '`evaluate` with a data folder that grew (Cora, 60 more references)', '`evaluate --data_dir=DIR`',
      'one line naming the splits and the file that differ (not the checkpoints)',
      'test_evaluate_on_grown_data_names_the_data_not_damaged_checkpoints'),
    C('write_fails_at_start', 'a write fails at the start (as on a full disk)',
      '`main` with files limited to 100 bytes (RLIMIT_FSIZE)', 'one line naming the file; no temporary file left',
      'test_a_failed_write_at_the_start_names_the_file_and_leaves_no_temporary'),
    C('seed_negative', '`--config.seed=-1`', '`main`', _NAME_FIELD_NOTHING_WRITTEN,
      'test_an_out_of_range_field_is_named_before_anything_is_written'),
    C('num_train_zero', '`--config.data.num_train=0`', '`main`', _NAME_FIELD_NOTHING_WRITTEN,
      'test_an_out_of_range_field_is_named_before_anything_is_written'),
    C('cora_unlabeled_tokens', '`evaluate --split=all` on a semi-supervised Cora run (unlabeled tokens: gold -1)',
      '`evaluate --split=all --json` (train accuracy {shown}; by hand over the {labeled} labeled tokens {by_hand}, '
      'over all {tokens} tokens {all_tokens})',
      'train accuracy counts the labeled tokens only (the unlabeled ones are not errors)',
      'test_train_accuracy_of_a_semi_supervised_run_counts_its_labeled_tokens_only',
      ('tests/test_citations.py::test_accuracy_on_the_training_split_counts_labeled_tokens_only',)),
    C('ctrl_c', 'Ctrl-C while training', 'SIGINT to `main` once a checkpoint is saved; then the same command',
      'one line saying the run resumes; exit 130; the same command resumes',
      'test_ctrl_c_while_training_is_one_line_and_the_run_resumes'),
    C('ctrl_c_saving', 'Ctrl-C while a checkpoint is written',
      'SIGINT to `main` saving a checkpoint every step, 0.3, 0.9 and 1.7 s after its first (3 runs)',
      'each: one line, exit 130, no temporary checkpoint folder left',
      'test_ctrl_c_while_a_checkpoint_is_written_leaves_no_temporary_folder',
      ('tests/test_faults.py::test_ctrl_c_during_a_save_takes_effect_once_the_save_is_complete',)),
    C('tune_ctrl_c_probe', 'Ctrl-C during a tune\'s first trial (issue 65)',
      'SIGINT to `tune` while XLA compiles the training step of its first trial; then the same command',
      'one line saying the tune resumes; exit 130 (was: a segmentation fault, exit 139); the same command makes the '
      'trial again',
      _TUNE_CTRL_C, (_IN_COMPILE, f'{_TUNE}{_TUNE_RANDOM}')),
    C('tune_ctrl_c_trial', 'Ctrl-C during a tune\'s trial (issue 65)',
      'SIGINT to `tune` while XLA compiles the training step of the trial made again; then the same command',
      'one line; exit 130 (was: a segmentation fault, exit 139); the same command makes the trial again and ends',
      _TUNE_CTRL_C, (_IN_COMPILE, f'{_TUNE}{_TUNE_RANDOM}')),
    C('users_run_file_names',
      '`--workdir` holding the user\'s own metrics.jsonl, lock and checkpoints/, no config.json', '`main`',
      'refused in one line, every file untouched (metrics.jsonl was replaced, lock deleted)',
      'test_a_folder_of_run_file_names_without_a_run_record_is_refused_untouched'),
    C('record_of_newer_version', 'config.json with a field this version does not know (a newer version\'s)',
      '`main --config.num_epochs=3` (resume), then `evaluate`',
      'both refused in one line naming the file and field; config.json untouched (it was rewritten without it)',
      'test_a_record_of_a_newer_version_is_refused_untouched',
      ('tests/test_configs.py::test_a_record_with_fields_this_version_does_not_know_is_refused_not_rewritten',)),
    C('first_format_unknown_field',
      'config.json of the first record format (top-level `solver`) with a top-level field no version knows',
      '`main --config.num_epochs=2` (resume), then `evaluate`, on tests/fixtures/workdir_v1 given it',
      'both refused in one line naming the file and field; config.json untouched (evaluated, and rewritten without '
      'it on resume)', 'test_a_first_format_record_with_a_field_no_version_knew_is_refused_untouched',
      ('tests/test_resume.py::test_a_first_format_record_with_a_field_no_version_knew_is_refused_untouched',)),
    C('config_of_another_network', '`evaluate` after config.json was given a layer more', '`evaluate`',
      'one line naming the array and the config (the intact checkpoint was called unreadable)',
      'test_evaluate_on_a_config_that_builds_another_network_does_not_call_the_checkpoint_unreadable'),
    C('overrides_recorded', 'a row of a config file with another method given',
      '`main --config=configs/tiny.py --config.method=feedforward --config.optimizer.learning_rate=0.02`',
      'config.json records the config file and every override: the command that makes the run again',
      'test_a_run_records_its_config_file_and_every_override',
      ('tests/test_configs.py::test_a_command_line_run_records_every_override_and_its_command_makes_it_again',)),
    C('rescore_bad_data_dir', '`experiments/rescore.py` with a --data_dir that is a file',
      '`rescore.py RECORD --data_dir=README.md`', 'one line before any record',
      'test_rescore_given_a_file_as_data_dir_is_one_line',
      ('tests/test_rescore.py::test_the_command_answers_a_bad_data_dir_and_ctrl_c_in_one_line',)),
    C('rescore_run_config', '`experiments/rescore.py` given a run\'s config.json', '`rescore.py WORKDIR/config.json`',
      'one line saying it is a run\'s config, not a record, and naming the record to give (was: "no predictions")',
      'test_rescore_given_a_runs_config_names_it_and_the_record_to_give',
      ('tests/test_rescore.py::test_a_runs_config_is_named_as_such_with_the_record_to_give',)),
    C('claims_truncated_record', '`experiments/claims.py` with one record cut short (invalid JSON)',
      '`python -m experiments.claims` on a copy of the checkout, a record of its first claim cut to 100 characters',
      'one line naming the record file (it named the claim); the ledger not rewritten',
      'test_claims_with_a_truncated_record_names_the_file',
      ('tests/test_claims.py::test_a_truncated_record_is_named',)),
    C('script_flag_typo', 'a typo in a list flag of a script, or in `predict --threshold`',
      '`compare_methods --datasets=genbas`, `ablation_mlc --rows=nonesuch`, `reproduce_tagging --seeds=0,x`, '
      '`predict --threshold=O.5`',
      'each refused by the flag parser naming the flag and the choices, before any work; exit 2 (was exit 1: '
      'configs/genbas.py not found, \'invalid literal for int()\', or the run read first)',
      'test_a_typo_in_a_scripts_list_flag_is_refused_before_any_work',
      ('tests/test_command_flags.py::test_a_typo_in_a_list_or_name_flag_is_refused_before_any_work',
       'tests/test_command_flags.py::test_a_typo_in_a_flag_of_evaluate_or_predict_is_refused_before_the_run_is_read')),
    # --- the processes of a multi-host run (--distributed, two processes on this machine) ---------------------
    C('processes_learning_rate', 'two processes of a run, one given another learning rate',
      'process 1 `--config.optimizer.learning_rate=0.5`, process 0 none', _DISAGREE,
      'test_processes_of_a_run_that_disagree_stop_before_training',
      (f'{_MULTIHOST}test_processes_given_different_flags_stop_naming_the_field',)),
    C('processes_seed', 'two processes of a run, one given another seed', 'process 1 `--config.seed=1`', _DISAGREE,
      'test_processes_of_a_run_that_disagree_stop_before_training',
      (f'{_MULTIHOST}test_processes_given_different_flags_stop_naming_the_field',)),
    C('processes_num_epochs', 'two processes of a run, one given another num_epochs',
      'process 1 `--config.num_epochs=3`', _DISAGREE, 'test_processes_of_a_run_that_disagree_stop_before_training',
      (f'{_MULTIHOST}test_processes_given_different_flags_stop_naming_the_field',)),
    C('processes_workdir', 'two processes of a run, one given another workdir', 'process 1 `--workdir` another folder',
      _DISAGREE, 'test_processes_of_a_run_that_disagree_stop_before_training',
      (f'{_MULTIHOST}test_processes_given_different_workdirs_stop_naming_both',)),
    C('processes_data', 'two processes of a run reading different copies of the data',
      'the same command in two folders whose `rows.arff` differ in one value', _DISAGREE,
      'test_processes_of_a_run_that_disagree_stop_before_training',
      (f'{_MULTIHOST}test_processes_reading_different_data_stop_naming_the_split',)),
    C('processes_same_id', 'two processes of a run both given --process_id=0',
      'the second started once the first serves the coordinator; `--initialization_timeout=10`',
      'the second refused at once, naming the port; the first stops at the timeout, naming what each process needs',
      'test_two_processes_given_process_id_0_are_named',
      (f'{_MULTIHOST}test_a_second_process_0_is_refused_and_the_first_stops_waiting',)),
    # --- plug-ins that break the contract (issue 44) ------------------------------------------------------------
    C('plugin_labels_outside', 'plug-in task with labels 5..14 for a 10-class space',
      '`main --config.data.variant=shifted`', _PLUGIN_REFUSED,
      'test_a_plugin_that_breaks_the_contract_is_refused_before_training',
      (f'{_PLUGINS}test_labels_outside_the_space_are_named_with_the_task_split_and_values',)),
    C('plugin_one_hot', 'plug-in task with one-hot y where the space wants class ids',
      '`main --config.data.variant=one_hot`', _PLUGIN_REFUSED,
      'test_a_plugin_that_breaks_the_contract_is_refused_before_training',
      (f'{_PLUGINS}test_one_hot_labels_where_the_space_wants_class_ids_are_named_with_both_shapes',)),
    C('plugin_make_task_none', 'plug-in `make_task` returning None', '`main --config.data.variant=none`',
      _PLUGIN_REFUSED, 'test_a_plugin_that_breaks_the_contract_is_refused_before_training',
      (f'{_PLUGINS}test_make_task_returning_none_is_named',)),
    C('plugin_make_task_field', 'plug-in `make_task` reading a config field its `default_config()` lacks',
      '`main --config.data.variant=misread` (it reads `config.model.output`, not `outputs`)',
      'one line naming the plug-in\'s file and line and the field, before training; nothing written',
      'test_a_plugin_that_breaks_the_contract_is_refused_before_training',
      (f'{_PLUGINS}test_make_task_reading_a_field_its_config_lacks_is_named_at_its_line',)),
    C('plugin_net_width', 'plug-in inference net with 7 outputs for a 10-class space',
      '`main --config.model.outputs=7`', _PLUGIN_REFUSED,
      'test_a_plugin_that_breaks_the_contract_is_refused_before_training',
      (f'{_PLUGINS}test_an_inference_net_of_the_wrong_width_is_named_before_training',)),
    C('plugin_predict_width', 'plug-in method whose `predict` returns 7 of 10 classes',
      '`main --config.method=faults_plugins.seven`', _PLUGIN_REFUSED,
      'test_a_plugin_that_breaks_the_contract_is_refused_before_training',
      (f'{_PLUGINS}test_a_method_whose_predict_misses_classes_is_named_before_training',)),
    C('plugin_nan_metric', 'plug-in evaluator returning {\'accuracy\': nan}', '`main --config.data.variant=nan_metric`',
      'one line naming the evaluator and the metric; no metrics.json',
      'test_a_plugin_that_fails_while_training_is_one_line',
      (f'{_PLUGINS}test_a_non_finite_select_metric_is_named_with_the_evaluator',)),
    C('plugin_solver_nan', 'plug-in solver returning a NaN u', '`main --config.implicit.solver.name=...nan_u`',
      'stops at the first log: quantity, step, last good checkpoint, and the solver named',
      'test_a_plugin_that_fails_while_training_is_one_line',
      (f'{_PLUGINS}test_a_solver_returning_nan_is_named_where_training_stops',)),
    C('plugin_solver_info', 'plug-in solver whose `info` is not a number',
      '`main`, the solver\'s info `{{\'iterations\': \'many\'}}`',
      'one line naming the solver and the value, as the first step is traced',
      'test_a_plugin_that_fails_while_training_is_one_line',
      (f'{_PLUGINS}test_a_solver_whose_info_is_not_a_number_is_named',)),
    C('plugin_solver_branch', 'plug-in solver branching in Python on a traced value (`if jnp.linalg.norm(v) > 0:`)',
      '`main --config.implicit.solver.name=...branches`',
      'one line naming the solver\'s file and line and what to use instead (`jnp.where`, `lax.cond`), as the first '
      'step is traced', 'test_a_plugin_that_fails_while_training_is_one_line',
      (f'{_PLUGINS}test_a_solver_branching_on_a_traced_value_is_named_at_its_line',)),
]
BY_KEY = {case.key: case for case in CASES}
assert len(BY_KEY) == len(CASES), 'two cases share a key'


def shown(err: str) -> list[str]:
  """The lines a user reads on stderr (absl's hint to --help aside)."""
  return [line.rstrip() for line in (err or '').splitlines() if line.strip() and not line.startswith('(run ')]


class Recorder:
  """The ``fault`` fixture: ``with fault(key, code, err): <assertions>`` records what case ``key`` showed (its exit
  status, and the lines of ``err`` a user reads, or ``lines``) on the test's report, "as it should be" when the
  block passes. ``how`` fills the ``{fields}`` of the case's how."""

  def __init__(self, node, scratch: Path, repo: Path):
    self.node, self.repo = node, str(repo)
    self.scratch = re.compile(re.escape(str(scratch)) + r'(/[^/\s\'"]+)?')

  def text(self, lines: list[str]) -> str:
    """The page's stderr cell: the first two lines, scratch paths as $TMP, this checkout as $REPO."""
    text = ' / '.join(lines[:2])
    text = self.scratch.sub('$TMP', text).replace(self.repo, '$REPO').replace('|', '\\|')
    if len(lines) > 2:
      text += f' (+{len(lines) - 2} lines)'
    return text or '(nothing)'

  @contextlib.contextmanager
  def __call__(self, key: str, code=None, err: str | None = None, *, lines: list[str] | None = None, **how):
    case = BY_KEY[key]
    name = getattr(self.node, 'originalname', self.node.name)
    assert case.test == name, f'tests/fault_cases.py names {case.test} as the test of {key!r}, not {name}'
    row = {'key': key, 'how': case.how.format(**how), 'exit': '' if code is None else str(code),
           'stderr': self.text(shown(err) if lines is None else lines), 'ok': False}
    self.node.user_properties.append(('fault_case', row))
    yield row
    row['ok'] = True


class PageWriter:
  """The plug-in ``--faults-page=PATH`` registers (in the main process; with xdist, the workers' reports come to
  it): keeps each case's record from the test reports and writes the table at the end of the session."""

  def __init__(self, config, path: str):
    self.config, self.path, self.rows, self.started = config, path, {}, time.time()

  def pytest_runtest_logreport(self, report):
    for name, row in report.user_properties:
      if name == 'fault_case':
        self.rows[row['key']] = row

  def pytest_sessionfinish(self, session):
    del session
    self.write(self.path, (time.time() - self.started) / 60)

  def pytest_terminal_summary(self, terminalreporter):
    bad = [case.key for case in CASES if case.key in self.rows and not self.rows[case.key]['ok']]
    not_run = [case.key for case in CASES if case.key not in self.rows]
    terminalreporter.write_line(
        f'faults page {self.path}: {len(CASES)} cases, {len(CASES) - len(bad) - len(not_run)} as they should be'
        + (f'; not as they should be: {", ".join(bad)}' if bad else '') + (f'; not run: {len(not_run)}' if not_run
                                                                           else ''))

  def write(self, path: str, minutes: float):
    from experiments import records  # pylint: disable=import-outside-toplevel
    command = shlex.join(['python', '-m', 'pytest', *self.config.invocation_params.args])
    lines = [
        '# Bad input and faults: what a user sees',
        '',
        f'Made by `{command}` on {datetime.date.today().isoformat()} ({minutes:.1f} min, {os.cpu_count()} CPU '
        'cores) from the fault cases of `tests/fault_cases.py`: each row is a case that a test of '
        '`tests/test_faults.py` runs as a user runs it and checks (the case list names the test, and the in-process '
        'tests elsewhere that assert the same behaviour). "stderr" is what it printed there (first two lines; `$TMP` '
        'is the scratch folder); "as it should be" says whether the test\'s assertions for the case passed. Exit 1 '
        'is a bad input or fault, exit 2 a bad command line; no exit status: the library reads the file as `main` '
        'does.',
        '',
        '| fault | how it was tried | exit | stderr | as it should be | what should happen |',
        '|---|---|---|---|---|---|',
    ]
    for case in CASES:
      row = self.rows.get(case.key)
      if row is None:
        how = case.how.format_map(collections.defaultdict(lambda: '?'))
        lines.append(f'| {case.fault} | {how} |  | (not run) | **not run** | {case.should} |')
      else:
        lines.append(f'| {case.fault} | {row["how"]} | {row["exit"]} | {row["stderr"]} | '
                     f'{"yes" if row["ok"] else "**no**"} | {case.should} |')
    records.write_page(path, '\n'.join(lines) + '\n')
