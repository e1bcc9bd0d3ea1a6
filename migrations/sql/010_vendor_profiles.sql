-- Vendor profiles (issue 9): the ONU fields beyond serial, description,
-- status and Rx power; NULL (or '') where the vendor has no such column or
-- no reading. onu_index is the ONU's raw row index, port_name its human
-- name by the vendor's convention ("0/1/3:5", "gpon-onu_1/1/3:5").
ALTER TABLE onu_data
    ADD COLUMN onu_index        text NOT NULL DEFAULT '',
    ADD COLUMN port_name        text NOT NULL DEFAULT '',
    ADD COLUMN name             text NOT NULL DEFAULT '',
    ADD COLUMN tx_power_dbm     double precision,
    ADD COLUMN olt_rx_power_dbm double precision,
    ADD COLUMN distance_m       double precision,
    ADD COLUMN temperature_c    double precision,
    ADD COLUMN voltage_v        double precision,
    ADD COLUMN bias_ma          double precision,
    ADD COLUMN last_down_cause  text NOT NULL DEFAULT '',
    ADD COLUMN last_down_at     timestamptz,
    ADD COLUMN last_up_at       timestamptz,
    ADD COLUMN model            text NOT NULL DEFAULT '',
    ADD COLUMN firmware         text NOT NULL DEFAULT '',
    -- removed_at: a complete walk did not find the ONU (NULL: present).
    ADD COLUMN removed_at       timestamptz;


-- seen_by: the attempt ("<execution_id>:<lease revision>") that last read
-- the ONU; a complete walk of the ONU table marks removed the ONUs it did
-- not read.
ALTER TABLE onu_data
    ADD COLUMN seen_by text NOT NULL DEFAULT '';

-- Varbinds of each execution the projector placed in an ONU field, and
-- those it could not place (bad index, unknown column, undecodable value,
-- no value), by reason: part of the onu_data read model (the varbind
-- consumer writes it), shown on the execution by the API.
CREATE TABLE execution_placement (
    olt_id            text NOT NULL,
    execution_id      text NOT NULL,
    placed_varbinds   integer NOT NULL DEFAULT 0,
    unplaced_varbinds integer NOT NULL DEFAULT 0,
    unplaced_reasons  jsonb NOT NULL DEFAULT '{}',
    PRIMARY KEY (olt_id, execution_id)
);
CREATE INDEX execution_placement_execution ON execution_placement (execution_id);
