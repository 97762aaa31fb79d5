// Driven by tests/compat/jdbc.rs: pgjdbc against an Aspen server started with
// `--auth-local scram-sha-256 --postgres-password sekret`. SCRAM-SHA-256 with the right and a
// wrong password; CREATE USER over JDBC; PGConnection.alterUserPassword, which reads
// password_encryption and sends a verifier it computed itself (ALTER USER "app" PASSWORD
// 'SCRAM-SHA-256$…'); the new password admits, the old one does not. Prints lines the test checks.
import java.sql.*;
public class JdbcAuth {
  static String url(String port, String user, String password) {
    return "jdbc:postgresql://127.0.0.1:" + port + "/postgres?sslmode=disable&user=" + user + "&password=" + password;
  }
  static void login(String port, String user, String password) {
    try (Connection c = DriverManager.getConnection(url(port, user, password));
         Statement s = c.createStatement();
         ResultSet r = s.executeQuery("SELECT current_user")) {
      r.next();
      System.out.println("in " + r.getString(1));
    } catch (SQLException e) {
      System.out.println("refused " + user + " " + e.getSQLState());
    }
  }
  public static void main(String[] a) throws Exception {
    String port = a[0];
    login(port, "postgres", "sekret");
    login(port, "postgres", "wrong");
    try (Connection c = DriverManager.getConnection(url(port, "postgres", "sekret"))) {
      try (Statement s = c.createStatement()) {
        s.execute("CREATE USER app PASSWORD 'first'");
      }
      login(port, "app", "first");
      c.unwrap(org.postgresql.PGConnection.class).alterUserPassword("app", "second".toCharArray(), null);
      login(port, "app", "first");
      login(port, "app", "second");
    }
  }
}
