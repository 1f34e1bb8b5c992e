"""The fast lane: `pytest -m "not slow"` runs every test file but the tests named here, which take seconds
each (real clocks, subprocesses, compilers, servers). The full suite, CI's (`.ci/run`, README's second
command), runs them all. conftest.py marks these `slow`; tests/test_fast_lane.py checks every name is a
test of its file and every file keeps tests in the lane.

Chosen from `pytest -m "not slow" -n 2 --durations=0` on the 2-core VM under a load average of 8: every test
function whose runs took 1 s or more there (about 0.3 s on an idle machine), chosen again as tests were added.
Four files have every test here (ALL_SLOW: each of their tests starts servers or processes on real time for
seconds); every other file keeps tests in the fast lane.
"""
from __future__ import annotations

#: Files whose every test is slow.
ALL_SLOW = {"test_bench_session.py", "test_identity_outages.py", "test_kills_and_outages.py", "test_slow_links.py"}

#: test file -> the names of its tests (every parameter of each) the fast lane leaves out
SLOW_TESTS = {
    "test_attended.py": {
        "test_the_pytest_plugin_skips_unless_hil_attended_and_then_shows_the_prompt",
        "test_unohil_run_attended_in_another_process_is_answered_by_a_press_on_the_served_unit",
    },
    "test_bench.py": {
        "test_bench_command_reports_every_figure_for_every_unit",
        "test_the_estimate_of_a_run_against_its_real_clock_duration",
        "test_unohil_report_draws_a_bench_file_as_histograms",
        "test_verdict_latency_over_a_pty_to_another_process",
    },
    "test_bench_fairness_kept.py": {
        "test_bench_stopped_by_a_signal_keeps_every_finished_race",
        "test_bench_whose_file_cannot_be_made_says_so",
        "test_bench_whose_report_fails_still_writes_its_results",
        "test_bench_with_a_failing_console_keeps_its_results",
        "test_fairness_stopped_by_a_signal_keeps_every_finished_seat",
    },
    "test_bench_session.py": {
        "test_a_bench_session_is_recorded_validated_and_replayed_with_a_diff",
    },
    "test_claims.py": {
        "test_wait_takes_the_unit_once_its_holder_lets_go",
    },
    "test_claims_processes.py": {
        "test_bench_runs_while_another_process_holds_an_emulated_showdown",
        "test_every_spelling_of_a_held_unit_is_refused_and_the_holding_run_goes_on",
        "test_three_emulated_units_two_processes_and_a_reused_pty_each_run_the_library_at_once",
    },
    "test_cli_logging.py": {
        "test_records_never_reach_results_written_to_stdout",
    },
    "test_cli_small.py": {
        "test_a_missing_path_says_so_without_an_empty_key",
        "test_conform_prints_every_skip_with_its_reason",
        "test_emulate_help_points_at_the_faults_document",
    },
    "test_cli_startup.py": {
        "test_version_imports_no_command_and_after_one_check_no_yaml",
    },
    "test_clib.py": {
        "test_a_device_receiver_answers_replies_and_events_unknown_type",
        "test_command_line_check_passes",
        "test_every_frame_vector_field_by_field",
        "test_random_frames_encode_and_decode_as_python_does",
        "test_size_for_a_microcontroller",
        "test_the_library_passes_every_vector_warning_free",
        "test_the_receiver_survives_a_bounded_fuzz_run",
        "test_the_vector_test_fails_on_a_wrong_frame",
    },
    "test_clib_firmware.py": {
        "test_a_flash_base_with_eight_player_buttons",
        "test_a_flash_inactivity_period_longer_than_half_the_clock_wrap_does_not_end_at_once",
        "test_a_unit_without_a_landing_sensor",
        "test_bad_arguments_are_a_usage_error",
        "test_each_image_is_a_unit_of_its_kind",
        "test_each_kind_s_core_keeps_its_state_in_the_structs_a_port_allocates",
        "test_every_image_builds_warning_free_under_clang",
        "test_the_firmware_passes_the_quick_acceptance_run",
    },
    "test_conform.py": {
        "test_a_full_run_covers_every_decision_and_json_and_console_say_so",
        "test_a_unit_without_an_optional_capability_fails_nothing",
        "test_conform_says_how_many_scenarios_depend_on_the_reference_generator",
        "test_every_decision_of_the_catalogue_is_covered_by_a_check_or_a_library_scenario",
        "test_over_a_pty_to_a_separate_emulator_process",
        "test_over_usb_with_the_usb_section",
        "test_quick_runs_one_scenario_per_decision_and_never_conforms",
        "test_the_emulator_conforms_with_its_whole_library",
        "test_usage_and_connection_errors_are_exit_2",
    },
    "test_conform_decision_mutants.py": {
        "test_a_reference_generator_of_another_stream_is_named_before_the_seeded_scenarios",
        "test_a_sensorless_showdown_breaking_a_tie_rule_does_not_conform",
        "test_a_unit_without_the_reference_generator_is_not_asked_for_its_draws",
        "test_quick_catches_a_tie_at_exactly_the_window_end",
        "test_quick_runs_an_edge_scenario_of_every_decision_that_has_one",
    },
    "test_conform_mutants.py": {
        "test_the_mutant_fails_its_check_and_only_that",
    },
    "test_console_capture.py": {
        "test_a_run_with_console_has_the_lines_of_each_race",
        "test_conform_puts_the_console_lines_of_each_check_in_its_json_and_junit",
        "test_console_lines_are_stamped_when_read_and_split_at_newlines",
        "test_console_mistakes_are_usage_errors",
    },
    "test_console_output.py": {
        "test_control_characters_in_a_name_never_reach_the_terminal_raw",
        "test_progress_lines_come_at_the_asked_pace",
        "test_rich_without_a_tty_keeps_numbers_whole",
        "test_without_a_tty_each_scenario_is_one_line_as_it_finishes_then_a_summary",
    },
    "test_emulator_flash_power.py": {
        "test_pty_handshake_and_a_turn",
    },
    "test_emulator_flash_turns.py": {
        "test_next_player_is_uniform_and_repeats_one_time_in_n",
    },
    "test_emulator_launcher_draws.py": {
        "test_burst_sizes_follow_the_triangular_weights",
        "test_fire_chance_statistics",
    },
    "test_emulator_launcher_power.py": {
        "test_accounting_invariant_over_long_random_runs",
        "test_pty_handshake_and_a_press",
    },
    "test_emulator_serve.py": {
        "test_bad_arguments_exit_2",
        "test_pty_handshake_and_race",
        "test_served_virtual_clock_over_pty",
        "test_tcp_two_units_and_reconnect",
        "test_without_serial_each_served_unit_has_one_of_its_own",
    },
    "test_emulator_serve_many.py": {
        "test_a_hard_descriptor_limit_too_low_for_the_units_is_one_message_and_exit_2_before_serving",
        "test_a_soft_descriptor_limit_below_what_the_units_need_is_raised_to_the_hard_limit",
        "test_one_process_serves_2000_tcp_units_and_each_answers_with_its_own_serial",
        "test_one_process_serves_more_ptys_than_select_allowed",
    },
    "test_emulator_showdown_line.py": {
        "test_line_exact_tie_is_a_coin_per_race",
    },
    "test_fault_sweep.py": {
        "test_a_bounded_sweep_of_the_three_libraries_never_fails_or_errs_a_right_unit",
        "test_the_issue_reproductions_fail_no_race_of_a_right_unit",
    },
    "test_faults.py": {
        "test_a_disconnect_hangs_up_a_tcp_client_and_the_runner_reconnects",
        "test_a_served_unit_with_faults_on_a_pty_never_fails_and_says_what_the_faults_did",
        "test_every_run_ends_with_the_link_health_in_the_table_and_the_json",
        "test_the_showdown_library_under_faults_never_fails_a_right_device",
    },
    "test_flash_buttons.py": {
        "test_every_base_size_the_spec_allows_passes_the_library",
    },
    "test_fuzz.py": {
        "test_a_flood_of_commands_is_answered_one_by_one_in_order",
        "test_any_bytes_any_state_the_unit_answers_per_spec_and_keeps_serving",
        "test_bounded_fuzz_run_every_frame_answered_as_the_spec_says",
    },
    "test_games.py": {
        "test_the_same_seed_plays_the_same_game_in_any_process",
    },
    "test_handed_frames.py": {
        "test_the_whole_library_runs_the_same_with_frames_as_objects_and_as_bytes",
    },
    "test_harness_links.py": {
        "test_pty_to_a_separate_emulator_process",
        "test_socket_url_to_a_tcp_emulator",
    },
    "test_harness_scenarios.py": {
        "test_a_host_stall_before_a_stimulus_reruns_the_race_instead_of_blaming_anyone",
        "test_a_host_stall_on_a_real_clock_changes_the_timing_report_not_the_verdict",
        "test_a_unit_with_another_generator_passes_every_scenario_not_written_for_the_reference_one",
        "test_the_whole_library_passes_on_the_virtual_clock",
    },
    "test_identity_outages.py": {
        "test_another_unit_on_the_port_after_an_outage_ends_that_devices_run_and_results_stay_the_first_units",
        "test_the_same_unit_back_on_the_port_after_an_outage_goes_on_under_its_new_boot_id",
    },
    "test_installed_paths.py": {
        "test_a_run_on_a_unit_keeping_real_time_says_how_long_it_will_take_before_it_starts",
        "test_a_short_run_on_real_time_prints_no_estimate",
        "test_given_scenario_files_are_all_accounted_for_even_those_no_device_runs",
        "test_library_says_where_each_part_is_and_how_many_files_and_scenarios_it_holds",
        "test_run_against_one_device_plays_its_kinds_part_of_the_library_and_says_what_it_left_out",
    },
    "test_interactive.py": {
        "test_ctrl_c_quits_cleanly",
        "test_flash_buttons_lights_and_a_held_key",
        "test_path_file_holds_what_stdout_says_and_an_unwritable_one_is_a_usage_error",
        "test_q_quits_and_the_terminal_is_as_it_was",
        "test_showdown_keys_load_start_and_press_and_the_harness_sees_a_person",
        "test_without_a_terminal_interactive_is_a_usage_error",
    },
    "test_kills_and_outages.py": {
        "test_a_run_killed_mid_race_leaves_the_unit_clean_for_the_next_run",
        "test_a_server_restarted_mid_run_costs_the_race_it_cut_and_the_run_goes_on",
        "test_ser2net_restarted_mid_run_costs_the_race_it_cut_and_the_run_goes_on",
    },
    "test_labgrid.py": {
        "test_reserving_by_tags_acquires_a_place_and_gives_it_back",
        "test_the_coordinators_lock_holds_across_users_and_the_local_one_on_this_host",
        "test_two_runners_share_three_places_waiting_their_turn_and_never_a_unit_at_once",
    },
    "test_labgrid_parts.py": {
        "test_emulate_writes_the_exporter_configuration_of_its_units",
        "test_exporter_configuration_and_connection_log_need_tcp",
    },
    "test_link_timing.py": {
        "test_conform_s_protocol_checks_pass_behind_a_burst_splitting_link",
    },
    "test_link_words.py": {
        "test_an_inject_queue_the_harness_can_work_with_runs",
        "test_random_damage_on_the_line_never_blames_the_units_crc_byte_order",
    },
    "test_one_place.py": {
        "test_reverse_enum_maps_come_from_the_catalogue",
    },
    "test_outputs.py": {
        "test_a_full_disk_costs_its_outputs_alone_and_never_the_run",
        "test_a_second_signal_abandons_the_race_and_cancels_the_units_stimuli",
        "test_a_signal_outside_a_run_is_one_line_and_its_exit_status",
        "test_a_signal_stops_after_the_race_in_progress_and_keeps_every_result",
        "test_stdout_redirected_to_a_file_gets_the_results_after_the_console_text",
    },
    "test_packaging.py": {
        "test_no_module_imports_the_folders_by_their_bare_names",
    },
    "test_protocol_properties.py": {
        "test_decoder_resynchronises_after_a_damaged_frame",
        "test_every_message_round_trips",
        "test_every_two_way_split_gives_the_same_output",
        "test_random_streams_never_raise_and_stay_bounded",
    },
    "test_protocol_schema.py": {
        "test_a_timer_rule_that_cannot_be_evaluated_is_refused_where_it_is_written",
        "test_a_wait_bound_is_an_expression",
        "test_reply_naming_no_reply_message",
    },
    "test_pytest_json.py": {
        "test_xdist_workers_write_one_file",
    },
    "test_pytest_plugin.py": {
        "test_a_badly_formed_tag_is_refused_with_its_position",
        "test_fewer_devices_than_workers_stops_the_session_at_start",
        "test_k_and_markers_select",
        "test_xdist_workers_each_own_a_device",
        "test_xdist_workers_find_no_free_device_and_fail_clearly",
        "test_yaml_is_collected_only_where_the_user_asks",
    },
    "test_pytest_plugin_pools.py": {
        "test_a_fixture_alone_brings_uno_hil_in",
        "test_a_hil_option_or_ini_key_makes_the_session_ask_for_uno_hil",
        "test_an_unrelated_session_loads_the_plugin_and_imports_nothing_heavy",
        "test_the_kind_markers_come_with_the_first_hil_option",
        "test_the_shipped_library_against_one_showdown_ends_with_nothing_failed",
    },
    "test_qemu_firmware.py": {
        "test_a_receive_ring_too_small_for_a_burst_does_not_conform_and_the_message_says_why",
        "test_a_unit_that_hangs_mid_race_is_power_cycled_and_the_run_goes_on",
        "test_firmware_puts_the_image_on_the_unit_before_the_run",
        "test_the_console_is_in_the_trace_json_junit_html_and_perfetto_in_order_with_the_events",
        "test_the_firmware_passes_the_quick_acceptance_run_under_qemu",
        "test_the_image_fits_the_board_and_its_boot_parameters_are_where_the_launcher_writes_them",
        "test_the_timing_tool_measures_a_real_time_unit_within_the_specs_budgets",
        "test_the_unit_without_a_landing_sensor",
    },
    "test_readable_output.py": {
        "test_bench_in_a_pipe_cuts_no_figure_name",
        "test_conform_in_a_pipe_cuts_no_decision_name_and_ends_on_one_line",
        "test_the_lines_of_a_run_never_show_a_bare_side_or_player_number",
    },
    "test_record.py": {
        "test_a_recorded_race_names_its_origin_and_anchors_on_what_it_followed",
        "test_a_trace_of_every_library_race_becomes_a_scenario_that_passes",
        "test_replay_compares_each_scenario_with_its_recording",
    },
    "test_report_export.py": {
        "test_the_traces_of_a_run_are_one_chrome_trace_with_a_process_per_unit",
    },
    "test_report_html.py": {
        "test_the_browser_check_catches_a_script_error",
        "test_the_page_loads_in_chromium_with_no_errors_and_its_elements",
    },
    "test_report_junit.py": {
        "test_conform_junit_is_schema_valid_with_identity",
    },
    "test_report_multi.py": {
        "test_the_page_of_several_runs_shows_the_changes_and_the_trends",
    },
    "test_report_schema.py": {
        "test_every_library_file_validates",
    },
    "test_results_kept.py": {
        "test_a_long_runs_peak_memory_grows_little_per_race",
        "test_a_recording_from_a_faulty_lines_trace_has_the_units_order",
        "test_a_second_signal_keeps_the_check_it_cut_short_as_interrupted",
        "test_conform_started_in_the_background_still_stops_on_sigint",
        "test_conform_stopped_by_a_signal_keeps_every_finished_check",
        "test_run_piped_to_head_keeps_its_results_and_says_why_it_exits_2",
        "test_run_with_stdout_on_a_full_device_keeps_its_results",
        "test_run_with_stdout_on_a_full_tmpfs_keeps_its_results",
    },
    "test_rig.py": {
        "test_a_17us_skew_under_50us_of_jitter_is_found_with_the_count_the_tool_chose",
        "test_a_1ms_poll_loop_scanning_a_first_is_a_skew_toward_a_of_half_its_period",
        "test_a_300us_skew_on_side_b_is_found_within_20us",
        "test_a_bad_rig_section_fails_at_its_line",
        "test_a_clean_path_is_fair",
        "test_rig_mode_catches_a_polling_unit",
        "test_the_flash_buzzer_race_finds_a_seat_that_is_late",
        "test_the_library_passes_in_rig_mode_on_a_clean_path",
        "test_unohil_conform_gains_the_fairness_check_of_spec_13_6",
        "test_unohil_fairness_and_bench_through_an_emulated_rig",
        "test_unohil_run_in_rig_mode",
    },
    "test_rig_bench.py": {
        "test_a_skew_on_player_2_alone_is_found_on_player_2_within_20us_and_on_no_other_seat",
        "test_conform_holds_every_flash_seat_to_the_bound",
        "test_unohil_fairness_on_a_flash_reports_every_seat_and_fails_the_late_one",
        "test_what_moves_a_watched_line_is_checked_at_its_line",
    },
    "test_rig_run.py": {
        "test_rig_scenarios_are_skipped_without_a_rig",
        "test_the_pytest_plugin_runs_through_a_rig",
    },
    "test_run_jobs.py": {
        "test_a_signal_stops_the_workers_and_keeps_the_finished_scenarios",
        "test_two_processes_give_the_one_process_report_on_the_whole_library",
    },
    "test_scenario_limits.py": {
        "test_a_hostile_file_is_one_error_with_its_position",
    },
    "test_ser2net.py": {
        "test_rfc2217_without_ign_set_control_says_what_to_add",
        "test_the_scenario_library_through_ser2net",
    },
    "test_slow_links.py": {
        "test_the_launcher_passes_and_conforms_behind_a_slow_line",
    },
    "test_standin_board.py": {
        "test_a_board_that_hangs_mid_run_is_power_cycled_through_labgrids_power_driver",
        "test_firmware_flashes_the_board_through_labgrids_flasher_and_the_unit_runs_that_image",
    },
    "test_store.py": {
        "test_bench_records_its_samples_as_races",
    },
    "test_timer_stamps.py": {
        "test_a_unit_stamping_its_timers_early_fails_on_every_timer",
        "test_a_unit_stamping_its_timers_late_passes_the_library",
    },
    "test_units_apart.py": {
        "test_a_unit_not_opened_whose_url_does_not_say_its_kind_leaves_no_kind_out",
        "test_a_unit_that_cannot_be_opened_leaves_the_others_running_and_the_results_written",
    },
    "test_usb.py": {
        "test_library_scenarios_through_the_runner_over_usb",
        "test_the_environments_units_get_serials_of_the_process_own",
    },
    "test_windows_imports.py": {
        "test_the_package_imports_and_runs_scenarios_without_fcntl_termios_or_pty",
    },
}
