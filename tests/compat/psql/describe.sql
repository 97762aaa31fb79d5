-- psql's describe commands print what they print against PostgreSQL 15: \d, \dt, \di (with
-- and without a pattern), \d NAME and \d+ NAME for tables and indexes, and \dn. Run with
-- `psql -X -a -f`; the expected output is describe.out, the same against Aspen and PostgreSQL 15.
\d
\dt nothing*
create table warehouse (w_id int primary key, w_name varchar(10) not null, w_tax numeric(4,4), w_ytd numeric(12,2) default 0.0);
create table district (d_w_id int not null references warehouse(w_id), d_id smallint, d_name varchar(10) unique, d_next_o_id int default 1, primary key (d_w_id, d_id));
create table "Mixed Case" (id bigint primary key, "order" text default 'new', flag boolean default true, created timestamp default current_timestamp, born date, code char(3), blob bytea, ratio double precision default -1.5, small real, n bigint default -1);
create table history (h_w_id int references warehouse(w_id) on delete cascade, h_d_id smallint, h_amount numeric(6,2), h_data varchar(24));
create index history_w on history (h_w_id, h_d_id);
create unique index district_name_w on district (d_name, d_w_id);
alter table history add constraint history_data_key unique (h_data);
\d
\dt
\dt d*
\dt public.w*
\di
\di district*
\d warehouse
\d district
\d "Mixed Case"
\d history
\d district_pkey
\d district_name_w
\d history_w
\d history_data_key
\d no_such_table
\dn
\d+ district
\d+ "Mixed Case"
\d+ district_name_w
\d+ warehouse
