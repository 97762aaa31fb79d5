// Driven by tests/compat/jdbc.rs: pgjdbc's DatabaseMetaData over the server on the given port,
// called as BenchBase reads a schema at the start of every run (SQLUtil.getCatalogDirect):
// getSchema, getTables, then per table getColumns, getIndexInfo and getImportedKeys; plus
// getExportedKeys, getCrossReference and a unique-only getIndexInfo. Prints one line per row; the test compares
// them with PostgreSQL's answers.
import java.sql.*;
public class JdbcMetadata {
  static String cols(ResultSet r, String... names) throws SQLException {
    StringBuilder b = new StringBuilder();
    for (String n : names) { if (b.length() > 0) b.append(' '); b.append(n.toLowerCase()).append('=').append(r.getString(n)); }
    return b.toString();
  }
  public static void main(String[] a) throws Exception {
    String url = "jdbc:postgresql://127.0.0.1:" + a[0] + "/postgres?user=postgres&sslmode=disable";
    try (Connection c = DriverManager.getConnection(url)) {
      try (Statement s = c.createStatement()) {
        s.execute("DROP TABLE IF EXISTS md_child");
        s.execute("DROP TABLE IF EXISTS md_parent");
        s.execute("CREATE TABLE md_parent (p_id int NOT NULL, p_w smallint NOT NULL, name varchar(16), amt numeric(12,2), PRIMARY KEY (p_w, p_id))");
        s.execute("CREATE TABLE md_child (c_id bigint PRIMARY KEY, c_p int NOT NULL, c_w smallint NOT NULL, note char(8), n int DEFAULT 7, ts timestamp, f float8, b boolean, t text, "
            + "FOREIGN KEY (c_w, c_p) REFERENCES md_parent (p_w, p_id) ON UPDATE RESTRICT ON DELETE CASCADE)");
        s.execute("CREATE INDEX md_child_idx ON md_child (c_w, c_p)");
        s.execute("CREATE UNIQUE INDEX md_child_t ON md_child (t)");
      }
      DatabaseMetaData md = c.getMetaData();
      System.out.println("schema " + c.getSchema());
      java.util.List<String> tables = new java.util.ArrayList<>();
      try (ResultSet r = md.getTables(c.getCatalog(), c.getSchema(), "md%", new String[] {"TABLE"})) {
        while (r.next()) { tables.add(r.getString("TABLE_NAME")); System.out.println("table " + cols(r, "TABLE_SCHEM", "TABLE_NAME", "TABLE_TYPE", "REMARKS")); }
      }
      for (String t : tables) {
        try (ResultSet r = md.getColumns(c.getCatalog(), c.getSchema(), t, null)) {
          while (r.next()) System.out.println("column " + t + " " + cols(r, "COLUMN_NAME", "DATA_TYPE", "TYPE_NAME", "COLUMN_SIZE", "DECIMAL_DIGITS", "IS_NULLABLE", "ORDINAL_POSITION", "COLUMN_DEF", "IS_AUTOINCREMENT"));
        }
        try (ResultSet r = md.getIndexInfo(c.getCatalog(), c.getSchema(), t, false, false)) {
          while (r.next()) System.out.println("index " + t + " " + cols(r, "INDEX_NAME", "NON_UNIQUE", "TYPE", "ORDINAL_POSITION", "COLUMN_NAME", "ASC_OR_DESC"));
        }
        try (ResultSet r = md.getIndexInfo(c.getCatalog(), c.getSchema(), t, true, false)) {
          while (r.next()) System.out.println("unique " + t + " " + cols(r, "INDEX_NAME", "COLUMN_NAME"));
        }
        try (ResultSet r = md.getImportedKeys(c.getCatalog(), c.getSchema(), t)) {
          while (r.next()) System.out.println("imported " + t + " " + cols(r, "PKTABLE_NAME", "PKCOLUMN_NAME", "FKTABLE_NAME", "FKCOLUMN_NAME", "KEY_SEQ", "UPDATE_RULE", "DELETE_RULE", "FK_NAME", "PK_NAME", "DEFERRABILITY"));
        }
        try (ResultSet r = md.getExportedKeys(c.getCatalog(), c.getSchema(), t)) {
          while (r.next()) System.out.println("exported " + t + " " + cols(r, "FKTABLE_NAME", "FKCOLUMN_NAME", "KEY_SEQ"));
        }
      }
      try (ResultSet r = md.getCrossReference(c.getCatalog(), c.getSchema(), "md_parent", c.getCatalog(), c.getSchema(), "md_child")) {
        while (r.next()) System.out.println("cross " + cols(r, "PKCOLUMN_NAME", "FKCOLUMN_NAME", "KEY_SEQ", "FK_NAME"));
      }
      try (ResultSet r = md.getCrossReference(c.getCatalog(), c.getSchema(), "md_child", c.getCatalog(), c.getSchema(), "md_parent")) {
        int n = 0; while (r.next()) n++; System.out.println("cross reversed " + n);
      }
      try (ResultSet r = md.getTables(c.getCatalog(), c.getSchema(), "md%", new String[] {"VIEW"})) {
        int n = 0; while (r.next()) n++; System.out.println("views " + n);
      }
      try (Statement s = c.createStatement()) {
        s.execute("DROP TABLE md_child");
        s.execute("DROP TABLE md_parent");
      }
    }
  }
}
